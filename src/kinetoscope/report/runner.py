"""The summary's one plan and one runner: every chosen analysis and the findings of a dataset, for
``kinetoscope summary``, ``kinetoscope report``, the viewer's Summary and Findings pages and
``Profile.summary()`` alike.

The plan (``way``) picks one of three equivalent ways, which give the same tables row for row:

* every rank at once: the dataset's tables read once, then analysed; the quickest below
  ``settings.BY_RANK_EVENTS`` events (input shapes and dictionaries are read once);
* rank by rank (``rank_by_rank``): one rank's rows in memory at a time, in this process or in
  worker processes side by side (``rank_pool``); taken from ``BY_RANK_EVENTS`` events on a
  local dataset of several ranks, or as ``by_rank`` and ``workers`` say;
* on a cluster: each rank's share a task on a Dask scheduler's workers, which read the rank
  where the dataset lies; taken where ``scheduler`` is given.

The options (``settings.ReportOptions``) are typed and travel with the work: the user's category
patterns and device (``user``) reach the analyses of this process and of every rank's task.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinetoscope._errors import CommandError
from kinetoscope.report import rank_pool
from kinetoscope.report.settings import (
    ReportOptions,
    analysis_threads,
    by_rank_fits,
    freeing_after_each,
    given_to_analyses,
)

if TYPE_CHECKING:
    from kinetoscope.query import Dataset
    from kinetoscope.report.prefetch import Early

CLUSTER, BY_RANK, AT_ONCE = "on a cluster", "rank by rank", "every rank at once"
FINDINGS = "findings"  # the findings as a section name (``--section findings``)


@dataclass(frozen=True)
class Made:
    """The chosen analyses, their tables by name, the findings (None: not asked) and, where asked,
    the run's facts (``render.summary_screen.RunFacts``), the findings' time origin and the
    analyses a one-screen summary did not make."""

    chosen: tuple[Any, ...]
    results: dict[str, Any]
    found: list[Any] | None
    facts: Any = None
    t0_ns: int | None = None
    on_demand: tuple[str, ...] = ()  # the analyses left out of a one-screen summary, made when asked


def checked(options: ReportOptions) -> ReportOptions:
    """``options`` checked (a ``CommandError`` says what is wrong); ``workers`` makes it rank by rank."""
    if options.top < 0:
        raise CommandError(f"--top must be 0 or more, not {options.top}")
    if options.threads < 1:
        raise CommandError(f"--threads must be 1 or more, not {options.threads}")
    if not options.short_kernel_us >= 0:
        raise CommandError(f"--short-kernel-us must be 0 or more, not {options.short_kernel_us}")
    if options.workers is None:
        return options
    if options.workers < 1:
        raise CommandError(f"--workers must be 1 or more, not {options.workers}")
    if options.by_rank is False or options.scheduler is not None:
        raise CommandError("--workers makes the summary rank by rank here: not with --no-by-rank or --scheduler")
    return dataclasses.replace(options, by_rank=True)


def summary(
    path: Path | str, options: ReportOptions, opened: Callable[[Path | str], Any], *, facts: bool = False,
    shown: tuple[str, ...] = (), screen: bool = False,
) -> Made:
    """The report of the profile at ``path`` (``opened(path)``: the dataset, ingested when needed),
    as one command makes it: the first tables read while the analyses are imported, Arrow's memory
    from the system allocator. ``shown``: sections asked by name, checked with ``only``; ``screen``:
    the one screen's analyses alone (``made``)."""
    from kinetoscope.report.prefetch import prefetching

    options = checked(options)
    way, first, workers = _early_way(path, options)
    options = dataclasses.replace(options, workers=workers) if workers is not None else options  # decided once
    wanted = not options.only and way != CLUSTER and not (way == BY_RANK and first is None)  # workers read
    with _system_memory(), prefetching(path, options.run, wanted=wanted, rank=first) as early:
        from kinetoscope.analysis import ANALYSES_BY_NAME  # imported while the tables are read

        unknown = [name for name in options.only if name not in ANALYSES_BY_NAME]
        unknown += [name for name in shown if name not in ANALYSES_BY_NAME and name != FINDINGS]
        if unknown:
            raise CommandError(f"unknown analysis {', '.join(unknown)}; choose from {', '.join(ANALYSES_BY_NAME)}")
        with opened(path) as dataset:
            return made(dataset, options, early, way, facts=facts, screen=screen)


def made(
    dataset: Dataset, options: ReportOptions, early: Early | None = None, way: str | None = None, *,
    facts: bool = False, t0_ns: int | None = None, screen: bool = False,
) -> Made:
    """The report of an open ``dataset`` by the way the plan picks (``way``: already picked);
    ``t0_ns``: the findings' time origin (None: the dataset's first event); ``screen``: only the
    analyses the one screen shows (``summary_screen.SHOWN``) and the findings, every other analysis
    left for ``--section`` to compute (``Made.on_demand``)."""
    from kinetoscope.analysis import ANALYSES, ANALYSES_BY_NAME, prepared
    from kinetoscope.analysis.tables import reusing

    chosen = tuple(a for a in ANALYSES if not options.only or a.name in options.only)
    on_demand: tuple[str, ...] = ()
    if screen and not options.only:
        chosen, on_demand = screen_split(chosen)
    loaded = (*chosen, ANALYSES_BY_NAME["steady_state"]) if options.steady_state else chosen
    columns = read_columns(loaded, findings=not options.only)
    names = [a.name for a in chosen]
    with reusing(), given_to_analyses(options):  # one split and one filter of each table for all
        way = way or plan(dataset, options, columns)
        if way == CLUSTER:
            results, found = _on_cluster(dataset, columns, names, options, t0_ns=t0_ns)
        elif way == BY_RANK:
            results, found = _by_rank(dataset, columns, names, options, early, t0_ns=t0_ns)
        else:
            tables = _read(dataset, early, columns, options.run)
            options = dataclasses.replace(options, threads=analysis_threads(tables, options))
            tables = prepared(tables, options.threads)  # the read ones go
            if not options.only and t0_ns is None:
                t0_ns = _time_origin(dataset, tables, options)
            results, found = _analysed(tables, chosen, options, None if options.only else t0_ns)
    return Made(chosen, results, found, _run_facts(dataset, options.run) if facts else None, t0_ns, on_demand)


def screen_split(chosen: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    """``chosen`` analyses parted into those the one screen shows (``summary_screen.SHOWN``) and the
    names of the others, which it leaves for ``--section``."""
    from kinetoscope.render.summary_screen import SHOWN

    return tuple(a for a in chosen if a.name in SHOWN), tuple(a.name for a in chosen if a.name not in SHOWN)


def on_screen(made: Made) -> Made:
    """``made`` as a one-screen summary holds it: the analyses the screen shows, the others named
    as made on demand (a report that made every analysis prints the answer ``summary`` prints)."""
    shown, others = screen_split(made.chosen)
    results = {a.name: made.results[a.name] for a in shown}
    return dataclasses.replace(made, chosen=shown, results=results, on_demand=(*made.on_demand, *others))


def read_columns(analyses: tuple[Any, ...], *, findings: bool) -> dict[str, tuple[str, ...] | None]:
    """Table name -> the columns ``analyses`` read, and the findings' rules where ``findings`` (None: all)."""
    from kinetoscope.analysis import needed_columns

    columns = needed_columns(analyses)
    if not findings:
        return columns
    from kinetoscope.findings import NEEDED_COLUMNS

    for table, wanted in NEEDED_COLUMNS.items():
        have = columns.get(table, ())
        columns[table] = None if have is None or wanted is None else (*have, *(c for c in wanted if c not in have))
    return columns


def plan(dataset: Any, options: ReportOptions, columns: dict[str, Any] | None) -> str:
    """How to summarise ``dataset``: on the cluster ``scheduler`` names, rank by rank, or every rank
    at once; rank by rank as ``by_rank`` says, else for a local dataset of several ranks that holds
    ``BY_RANK_EVENTS`` events or more (read from its footers) and analyses that read them (``columns``,
    None: all). A dataset with no ranks (of ``run``) is read at once, whatever the options."""
    ranks = dataset.ranks(options.run)
    if not ranks:
        return AT_ONCE
    if options.scheduler is not None:
        return CLUSTER
    if options.by_rank is not None:
        return BY_RANK if options.by_rank else AT_ONCE
    return BY_RANK if by_rank_fits(dataset, options.run, columns) else AT_ONCE


def _early_way(path: Path | str, options: ReportOptions) -> tuple[str | None, tuple[str, int] | None, int | None]:
    """The way (``plan``) where it is known before the analyses are imported (a local dataset,
    every analysis), the (run, rank) to read first where it is rank by rank in this process, and
    how many worker processes make the ranks' shares where it is rank by rank; Nones where it is
    known only once the profile is ingested or the analyses chosen."""
    from kinetoscope.dataset import directory as dataset_dir

    if options.only or not isinstance(path, Path) or not dataset_dir.is_dataset(path):
        return None, None, None
    from kinetoscope.query import Dataset

    dataset = Dataset(path)
    way = plan(dataset, options, None)
    if way != BY_RANK:
        return way, None, None
    workers = rank_pool.workers(dataset, options.run, options.workers)
    if workers > 1:
        return way, None, workers  # the workers read every rank: none is read early here
    return way, dataset.ranks(options.run)[0], workers


@contextlib.contextmanager
def _system_memory() -> Iterator[None]:
    """Arrow's memory from the system allocator for this summary: Arrow's default (mimalloc) hands
    the pages of the many short-lived filters and gathers back to the system and faults them in
    again, about a third more CPU time (system time) on a large dataset, for the same peak."""
    import pyarrow as pa

    before = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(before)


Results = tuple[dict[str, Any], list[Any] | None]


def _on_cluster(dataset: Any, columns: dict[str, Any], names: list[str], options: ReportOptions, *,
                t0_ns: int | None) -> Results:  # fmt: skip
    """The summary rank by rank, each rank's share a task on the workers of ``options.scheduler``."""
    from kinetoscope.ingest.running.executors import cluster_executor
    from kinetoscope.report.rank_by_rank import summarised

    assert options.scheduler is not None
    with cluster_executor(options.scheduler) as executor:
        return summarised(dataset, columns, names, options, None, executor=executor, t0_ns=t0_ns)


def _by_rank(dataset: Any, columns: dict[str, Any], names: list[str], options: ReportOptions,
             early: Early | None, *, t0_ns: int | None) -> Results:  # fmt: skip
    """The summary rank by rank: in this process, or with ranks side by side in worker processes."""
    from concurrent.futures.process import BrokenProcessPool

    from kinetoscope.report.rank_by_rank import summarised

    workers = rank_pool.workers(dataset, options.run, options.workers)
    if workers <= 1:
        return summarised(dataset, columns, names, options, early, t0_ns=t0_ns)
    threads = rank_pool.threads_per_worker(options.threads, workers)
    shared = dataclasses.replace(options, threads=threads)
    try:
        with rank_pool.pool(workers, threads) as executor:
            return summarised(dataset, columns, names, shared, None, executor=executor, t0_ns=t0_ns)
    except BrokenProcessPool as exc:
        raise CommandError(
            f"a summary worker process ended abruptly ({exc}): killed (by the out-of-memory killer, or a "
            "signal), or it could not start; --workers 1 makes every rank in this process"
        ) from exc


def _read(dataset: Any, early: Early | None, columns: dict[str, Any], run: str | None) -> dict[str, Any]:
    """``columns`` of the dataset: those read early where they are the ones, else read now."""
    from kinetoscope.report.prefetch import NARROWED, taken

    read = taken(early, columns)
    return read if read is not None else dataset.load(columns, run=run, narrowed=NARROWED)


def _analysed(tables: dict[str, Any], chosen: tuple[Any, ...], options: ReportOptions, t0_ns: int | None) -> Results:
    """Each chosen analysis's table by name, and the findings (None: not asked, ``t0_ns`` None),
    computed by ``options.threads`` threads that share the per-rank splits and masks. The findings
    read the whole ``tables``; the analyses the window the options cut (``window_launched_only``,
    ``steady_state``), except a ``windowless`` one, which says where the window is."""
    from kinetoscope.analysis.tables import threaded
    from kinetoscope.report.settings import analysis_options, windowed

    whole, ready = windowed(tables, options)
    given = analysis_options(options)
    calls: list[Callable[[], Any]] = [
        functools.partial(a, whole if options.steady_state and a.windowless else ready, a.pick(given)) for a in chosen
    ]
    if t0_ns is not None:  # the longest call first, so that the threads end together
        calls.insert(0, functools.partial(_findings, tables, t0_ns))
    done = threaded(calls, options.threads, freeing_after_each(tables, options))
    found = done.pop(0) if t0_ns is not None else None
    return {a.name: table for a, table in zip(chosen, done, strict=True)}, found


def _time_origin(dataset: Any, tables: dict[str, Any], options: ReportOptions) -> int:
    """The findings' deep links count from the dataset's first event, as the viewer does (the whole
    dataset's, not the run's, under ``run``)."""
    import pyarrow.compute as pc

    from kinetoscope.report.settings import first_ts_ns

    if options.run is not None:
        return first_ts_ns(dataset)
    return int(pc.min(tables["events"].column("ts_ns")).as_py() or 0)


def _findings(tables: dict[str, Any], t0_ns: int) -> list[Any]:
    """The findings, from the very tables the analyses read (they hold every column the rules
    read), so the dataset is read once and the rules share the analyses' per-rank splits and masks."""
    from kinetoscope.findings import NEEDED_COLUMNS, run_rules

    return run_rules({name: tables[name] for name in NEEDED_COLUMNS}, t0_ns=t0_ns)


def _run_facts(dataset: Any, run: str | None) -> Any:
    """Each rank's device names and memory capacity, from the sessions (``deviceProperties``)."""
    import json

    from kinetoscope.render.summary_screen import RunFacts

    sessions = dataset.table("sessions", ["run", "rank", "device_name", "device_memory"], run).to_pylist()
    names: dict[tuple[str, int], str] = {}
    capacity: dict[tuple[str, int], int] = {}
    for row in sessions:
        key = (row["run"], row["rank"])
        if row.get("device_name"):
            names.setdefault(key, row["device_name"])
        sizes = [int(size) for size in json.loads(row.get("device_memory") or "{}").values()]
        if sizes:
            capacity[key] = max(capacity.get(key, 0), *sizes)
    return RunFacts(names, capacity)

"""Summarise a profile: per-rank and across-rank analyses.

Per rank: wall time and steps, host and device busy time, top framework ops (self and total
time), top kernels, memory copies and sets, collective time and its overlap with
computation, host CPU and memory, device memory and allocation peaks, dropped events.
Device time by launching op, input shape, outermost annotation and op category, and the
roofline per op and shape. Where the device's idle time goes (host wait, launch latency, sync),
launch delays, queues and short kernels, and the steady-state window (--steady-state runs the
analyses on it alone). Across ranks: step-time spread and the straggler. Findings
(`kinetoscope findings`) come first unless --only picks analyses. PROFILE_DIR is ingested
first (only what changed since the last time); a DATASET is read as is.

--categories FILE (or $KINETOSCOPE_CATEGORIES) adds category name patterns, tried before the
built-in ones: a JSON or TOML table of category -> list of regular expressions.
--device NAME (or $KINETOSCOPE_DEVICE) sets the device the roofline uses: a table entry
(`H100 SXM`, `MI300X`, ...) or a JSON or TOML file of one entry's fields.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinetoscope._errors import CommandError
from kinetoscope.cli import rank_pool
from kinetoscope.cli.locations import SCHEDULER_ENV, missing
from kinetoscope.cli.sources import add_profile_argument, opened_dataset, profile_path, view_target, warm_ingest
from kinetoscope.report.settings import BY_RANK_EVENTS, by_rank_fits, default_threads

if TYPE_CHECKING:
    from kinetoscope.report.prefetch import Early


SCREEN, ALL, SECTIONS = "screen", "all", "sections"
FINDINGS = "findings"


@dataclass(frozen=True)
class SummaryOptions:
    path: Path | str
    output: str
    top: int
    only: tuple[str, ...]
    run: str | None
    window_launched_only: bool = False
    categories: Path | None = None
    device: str | None = None
    steady_state: bool = False
    short_kernel_us: float = 10.0
    threads: int = 1  # threads computing the analyses and the findings
    by_rank: bool | None = None  # read and analyse one rank at a time (``report.rank_by_rank``); None: by size
    scheduler: str | None = None  # a Dask scheduler whose workers make the ranks' shares (rank by rank)
    workers: int | None = None  # processes making the ranks' shares (rank by rank); None: by the CPUs
    layout: str = SCREEN  # text: SCREEN (one screen), ALL (every section in full) or SECTIONS (``shown``'s)
    shown: tuple[str, ...] = ()  # the sections ``--section`` names (analyses, or ``findings``)
    target: str = "PATH"  # the profile as the user named it, for the findings' ``kinetoscope view`` commands


class SummaryCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_profile_argument(parser, "path", "a profile tree or an ingested dataset")
        form = parser.add_mutually_exclusive_group()
        form.add_argument("--json", dest="output", action="store_const", const="json", help="JSON output")
        form.add_argument("--markdown", dest="output", action="store_const", const="markdown", help="Markdown output")
        parser.add_argument(
            "--top",
            type=int,
            default=10,
            help="rows per rank in the ranked analyses (top_ops, top_kernels, gpu_time_by_*, op_roofline, "
            "top_allocation_stacks; default 10)",
        )
        parser.add_argument(
            "--all",
            action="store_true",
            help="every section in full (default: the answer in one screen; --json and --markdown keep every section)",
        )
        parser.add_argument(
            "--section",
            action="append",
            default=[],
            metavar="NAME",
            help="show this section in full: an analysis or 'findings' (repeatable, or comma-separated)",
        )
        parser.add_argument("--only", default="", help="comma-separated analyses to run (default: all)")
        parser.add_argument("--run", default=None, help="only this run of a multi-run dataset")
        parser.add_argument(
            "--window-launched-only",
            action="store_true",
            help="leave out device work launched before the profiling window (as HTA and TraceLens do)",
        )
        parser.add_argument(
            "--steady-state",
            action="store_true",
            help="only the events in each rank's steady-state window (the steady_state analysis: warm-up left out)",
        )
        parser.add_argument(
            "--short-kernel-us",
            type=float,
            default=10.0,
            help="device work shorter than this is a short kernel in kernel_launches (default 10)",
        )
        parser.add_argument(
            "--threads",
            type=int,
            default=default_threads(),
            help=f"threads computing the analyses and findings (default {default_threads()}: the CPUs this "
            "process may use, at most 4; 1: one after another)",
        )
        parser.add_argument(
            "--by-rank",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="read and analyse one rank at a time in each process (this one, or each of --workers), so "
            "that memory holds a few ranks' rows, not all (default: for a dataset of several ranks and "
            f"{BY_RANK_EVENTS:,} events or more); the same results either way",
        )
        parser.add_argument(
            "--workers",
            type=int,
            default=None,
            help="worker processes analysing ranks side by side, each on its share of the CPUs and at most "
            "--threads threads; implies --by-rank (default, rank by rank: from "
            f"{rank_pool.MIN_CPUS} CPUs on, one per {rank_pool.CPUS_PER_WORKER} CPUs and at most one per rank, "
            "as many as the available memory holds; else 1: every rank in this process)",
        )
        parser.add_argument(
            "--scheduler",
            default=None,
            help="Dask scheduler (tcp://HOST:PORT) whose workers analyse the ranks, each reading its rank where "
            f"the dataset lies (default: ${SCHEDULER_ENV})",
        )
        parser.add_argument("--categories", type=Path, default=None, help="JSON or TOML file of op category patterns")
        parser.add_argument("--device", default=None, help="roofline device: a table entry or a JSON or TOML file")

    def run(self, args: argparse.Namespace) -> int:
        from kinetoscope.cli.malloc_options import tune_malloc

        tune_malloc()  # before any thread allocates: the import, the ingest and the analyses' threads
        only = tuple(n.strip() for n in args.only.split(",") if n.strip())
        shown = tuple(n.strip() for given in args.section for n in given.split(",") if n.strip())
        if shown and not only:  # only the analyses named (every one, and the rules, for the findings)
            only = () if FINDINGS in shown else shown
        layout = SECTIONS if shown else ALL if args.all or only else SCREEN
        options = SummaryOptions(
            profile_path(args.path, before_import=warm_ingest),
            args.output or "text",
            args.top,
            only,
            args.run,
            args.window_launched_only,
            args.categories,
            args.device,
            steady_state=args.steady_state,
            short_kernel_us=args.short_kernel_us,
            threads=args.threads,
            by_rank=args.by_rank,
            # ``--workers`` asks for this machine: the environment's scheduler then does not apply
            scheduler=args.scheduler or (os.environ.get(SCHEDULER_ENV) if args.workers is None else None) or None,
            workers=args.workers,
            layout=layout,
            shown=shown,
            target=view_target(args.path),
        )
        return summarise(options)


def summarise(options: SummaryOptions) -> int:
    from kinetoscope.report.prefetch import prefetching

    if options.top < 0:
        raise CommandError(f"--top must be 0 or more, not {options.top}")
    if options.threads < 1:
        raise CommandError(f"--threads must be 1 or more, not {options.threads}")
    if not options.short_kernel_us >= 0:
        raise CommandError(f"--short-kernel-us must be 0 or more, not {options.short_kernel_us}")
    if missing(options.path):
        raise CommandError(f"{options.path}: no such file or directory")
    options = _checked_workers(options)
    if options.scheduler is not None:
        _check_cluster_settings(options)
    way, first, workers = _early_way(options)
    options = dataclasses.replace(options, workers=workers) if workers is not None else options  # decided once
    wanted = not options.only and way != CLUSTER and not (way == BY_RANK and first is None)  # workers read
    with _system_memory(), prefetching(options.path, options.run, wanted=wanted, rank=first) as early:
        from kinetoscope.analysis import ANALYSES_BY_NAME  # imported while the tables are read
        from kinetoscope.analysis.reuse import reusing

        unknown = [name for name in options.only if name not in ANALYSES_BY_NAME]
        unknown += [name for name in options.shown if name not in ANALYSES_BY_NAME and name != FINDINGS]
        if unknown:
            raise CommandError(f"unknown analysis {', '.join(unknown)}; choose from {', '.join(ANALYSES_BY_NAME)}")
        with _settings(options), reusing():  # one split and one filter of each table for all
            return _summarise(options, early, way)


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


def _summarise(options: SummaryOptions, early: Early | None, way: str | None) -> int:
    from kinetoscope.analysis import ANALYSES, ANALYSES_BY_NAME, needed_columns, prepared
    from kinetoscope.render import Section

    chosen = tuple(a for a in ANALYSES if not options.only or a.name in options.only)
    loaded = (*chosen, ANALYSES_BY_NAME["steady_state"]) if options.steady_state else chosen
    columns = needed_columns(loaded)
    with opened_dataset(options.path) as dataset:
        way = way or _way(dataset, options, columns)
        if way == CLUSTER:
            results, found = _on_cluster(dataset, columns, [a.name for a in chosen], options)
        elif way == BY_RANK:
            results, found = _by_rank(dataset, columns, [a.name for a in chosen], options, early)
        else:
            tables = prepared(_read(dataset, early, columns, options.run), options.threads)  # the read ones go
            t0_ns = _time_origin(dataset, tables, options) if not options.only else None
            results, found = _analysed(tables, chosen, options, t0_ns)
        facts = _run_facts(dataset, options.run) if options.output == "text" and options.layout == SCREEN else None
    sections = [Section(a.name, a.title, a.description, results[a.name]) for a in chosen]
    _render(sections, found, options, facts)
    return 0


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


def _on_cluster(
    dataset: Any, columns: dict[str, Any], names: list[str], options: SummaryOptions
) -> tuple[dict[str, Any], list[Any] | None]:
    """The summary rank by rank, each rank's share a task on the workers of ``options.scheduler``."""
    from kinetoscope.ingest.running.executors import cluster_executor

    assert options.scheduler is not None
    from kinetoscope.report.rank_by_rank import summarised

    with cluster_executor(options.scheduler) as executor:
        return summarised(dataset, columns, names, options, None, executor=executor)


def _checked_workers(options: SummaryOptions) -> SummaryOptions:
    """``--workers`` checked; it makes the summary rank by rank."""
    if options.workers is None:
        return options
    if options.workers < 1:
        raise CommandError(f"--workers must be 1 or more, not {options.workers}")
    if options.by_rank is False or options.scheduler is not None:
        raise CommandError("--workers makes the summary rank by rank here: not with --no-by-rank or --scheduler")
    return dataclasses.replace(options, by_rank=True)


def _by_rank(
    dataset: Any, columns: dict[str, Any], names: list[str], options: SummaryOptions, early: Early | None
) -> tuple[dict[str, Any], list[Any] | None]:
    """The summary rank by rank: in this process, or with ranks side by side in worker processes."""
    from concurrent.futures.process import BrokenProcessPool

    from kinetoscope.report.rank_by_rank import summarised

    workers = rank_pool.workers(dataset, options.run, options.workers)
    if workers <= 1:
        return summarised(dataset, columns, names, options, early)
    threads = rank_pool.threads_per_worker(options.threads, workers)
    shared = dataclasses.replace(options, threads=threads)
    try:
        with rank_pool.pool(workers, threads) as executor:
            return summarised(dataset, columns, names, shared, None, executor=executor)
    except BrokenProcessPool as exc:
        raise CommandError(
            f"a summary worker process ended abruptly ({exc}): killed (by the out-of-memory killer, or a "
            "signal), or it could not start; --workers 1 makes every rank in this process"
        ) from exc


def _check_cluster_settings(options: SummaryOptions) -> None:
    """Refuse op categories and a roofline device the workers would not see (they are read from this
    process's environment, which the workers do not share)."""
    from kinetoscope.analysis import categories, devices

    given = {
        "--categories": options.categories or os.environ.get(categories.ENV_VAR),
        "--device": options.device or os.environ.get(devices.ENV_VAR),
    }
    named = [name for name, value in given.items() if value]
    if named:
        raise CommandError(
            f"{' and '.join(named)} (or ${categories.ENV_VAR}, ${devices.ENV_VAR}) are not carried to a "
            "cluster's workers: summarise without --scheduler to use them"
        )


CLUSTER, BY_RANK, AT_ONCE = "on a cluster", "rank by rank", "every rank at once"


def _way(dataset: Any, options: SummaryOptions, columns: dict[str, Any] | None) -> str:
    """How to summarise ``dataset``: on the cluster ``--scheduler`` names, rank by rank, or every rank
    at once; rank by rank as ``--by-rank`` says, else for a local dataset of several ranks that holds
    ``BY_RANK_EVENTS`` events or more (read from its footers) and analyses that read them (``columns``,
    None: all). A dataset with no ranks (of ``--run``) is read at once, whatever the options."""
    ranks = dataset.ranks(options.run)
    if not ranks:
        return AT_ONCE
    if options.scheduler is not None:
        return CLUSTER
    if options.by_rank is not None:
        return BY_RANK if options.by_rank else AT_ONCE
    return BY_RANK if by_rank_fits(dataset, options.run, columns) else AT_ONCE


def _early_way(options: SummaryOptions) -> tuple[str | None, tuple[str, int] | None, int | None]:
    """The way to summarise (``_way``) where it is known before the analyses are imported (a local
    dataset, every analysis), the (run, rank) to read first where it is rank by rank in this process,
    and how many worker processes make the ranks' shares where it is rank by rank; Nones where it is
    known only once the profile is ingested or the analyses chosen."""
    from kinetoscope.dataset import directory

    if options.only or not isinstance(options.path, Path) or not directory.is_dataset(options.path):
        return None, None, None
    from kinetoscope.query import Dataset

    dataset = Dataset(options.path)
    way = _way(dataset, options, None)
    if way != BY_RANK:
        return way, None, None
    workers = rank_pool.workers(dataset, options.run, options.workers)
    if workers > 1:
        return way, None, workers  # the workers read every rank: none is read early here
    return way, dataset.ranks(options.run)[0], workers


def _read(dataset: Any, early: Early | None, columns: dict[str, Any], run: str | None) -> dict[str, Any]:
    """``columns`` of the dataset: those read early where they are the ones, else read now."""
    from kinetoscope.report.prefetch import taken

    read = taken(early, columns)
    return read if read is not None else dataset.load(columns, run=run)


def _analysed(
    tables: dict[str, Any], chosen: tuple[Any, ...], options: SummaryOptions, t0_ns: int | None
) -> tuple[dict[str, Any], list[Any] | None]:
    """Each chosen analysis's table by name, and the findings (None: not asked, ``t0_ns`` None),
    computed by ``options.threads`` threads that share the per-rank splits and masks. The findings
    read the whole ``tables``; the analyses the window the options cut (``--window-launched-only``,
    ``--steady-state``), except a ``windowless`` one, which says where the window is."""
    from kinetoscope.analysis.reuse import threaded
    from kinetoscope.report.settings import analysis_options, windowed

    whole, ready = windowed(tables, options)
    given = analysis_options(options)
    calls: list[Callable[[], Any]] = [
        functools.partial(a, whole if options.steady_state and a.windowless else ready, a.pick(given)) for a in chosen
    ]
    if t0_ns is not None:  # the longest call first, so that the threads end together
        calls.insert(0, functools.partial(_findings, tables, t0_ns))
    done = threaded(calls, options.threads)
    found = done.pop(0) if t0_ns is not None else None
    return {a.name: table for a, table in zip(chosen, done, strict=True)}, found


def _render(sections: list[Any], found: list[Any] | None, options: SummaryOptions, facts: Any) -> None:
    """JSON and Markdown: every section (and the findings); text: one screen, every section, or the
    ``--section`` ones."""
    from kinetoscope.findings.document import write_text
    from kinetoscope.render import get_renderer

    output = options.output
    if found is not None and output == "json":
        _render_json_with_findings(sections, found)
        return
    if output == "text" and options.layout == SCREEN and found is not None:
        from kinetoscope.findings.document import screen_lines
        from kinetoscope.render.summary_screen import write_screen

        lines = screen_lines(found, options.target, width=SCREEN_WIDTH, most=SCREEN_FINDINGS)
        write_screen(sections, sys.stdout, findings=lines, facts=facts, width=SCREEN_WIDTH)
        sys.stdout.write("\n")
        return
    if output == "text" and options.layout == SECTIONS:
        sections = [s for s in sections if s.name in options.shown]
        found = found if FINDINGS in options.shown else None
    if found is not None:
        write_text(found, sys.stdout, markdown=output == "markdown", target=options.target)
    get_renderer(output).render(sections, sys.stdout)


SCREEN_WIDTH = 100
SCREEN_FINDINGS = 5  # groups of findings the one screen shows


def _time_origin(dataset: Any, tables: dict[str, Any], options: SummaryOptions) -> int:
    """The findings' deep links count from the dataset's first event, as the viewer does (the whole
    dataset's, not the run's, under ``--run``)."""
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


def _render_json_with_findings(sections: list[Any], found: list[Any]) -> None:
    """The summary's JSON document with the findings document beside ``analyses``."""
    from kinetoscope.findings.document import document as findings_document
    from kinetoscope.render.summary_json import document, write

    write(document(sections, findings_document(found)), sys.stdout)


@contextlib.contextmanager
def _settings(options: SummaryOptions) -> Iterator[None]:
    """``--categories`` and ``--device`` as the environment variables the analyses read, checked first,
    for this summary only (the process's environment is as it was afterwards)."""
    from kinetoscope.analysis import categories, devices

    wanted = {categories.ENV_VAR: options.categories, devices.ENV_VAR: options.device}
    before = {name: os.environ.get(name) for name in wanted}
    os.environ.update({name: str(value) for name, value in wanted.items() if value is not None})
    try:
        try:
            categories.user_rules()
            devices.override()
        except (OSError, ValueError, TypeError) as exc:
            raise CommandError(str(exc)) from exc
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


command = SummaryCommand()

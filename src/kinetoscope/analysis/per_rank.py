"""The analyses computed rank by rank and combined, so that no process holds more than one rank's rows.

A rank analysis (``scope`` rank) whose rows depend on that rank alone is the ranks' results one
after another (``RANK_LOCAL``): ``by_rank`` runs those on any ``concurrent.futures`` executor (a
Dask cluster's, a process pool). The rest need a little of every rank, and ``rank_part`` keeps that
little while a rank's tables are in memory: the rank's rows of the rank analyses, and the few
events the across-ranks analyses read (``run_rows``: steps, collectives, the first and last
events). ``combined`` then makes the whole summary's tables from the parts, as each analysis's
``Shares`` (in the registry) says: the rank rows one rank after another, the across-ranks
analyses over the run rows, or the analysis's own combining (``kernel_type_breakdown``'s
all-ranks rows summed from the ranks' rows, ``stragglers`` from the ranks'
``communication_overlap`` rows). ``tests/analysis/test_per_rank.py`` holds both ways to the
analyses over all ranks at once.
"""

from __future__ import annotations

import concurrent.futures as cf
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis import (
    ANALYSES,
    ANALYSES_BY_NAME,
    Analysis,
    AnalysisOptions,
    TopOptions,
    needed_columns,
    prepared,
    run_all,
)
from kinetoscope.analysis._tables.column_arrays import ints
from kinetoscope.analysis._tables.masks import is_in, not_empty, starts_with
from kinetoscope.analysis._tables.rank_slices import Tables, concat_widened
from kinetoscope.analysis._tables.reuse import threaded
from kinetoscope.analysis._tables.selection import where
from kinetoscope.analysis.time.steps import STEP_PREFIX
from kinetoscope.model import kinds

# The rank analyses that are their ranks' rows one after another (not, e.g., kernel_type_breakdown,
# which adds rows for all ranks together).
RANK_LOCAL = tuple(a.name for a in ANALYSES if a.scope == "rank" and a.shares.combine is None)

Loader = Callable[[Mapping[str, Sequence[str] | None]], Tables]


def rank_results(load: Loader, names: Sequence[str], top: int) -> dict[str, pa.Table]:
    """One rank: its tables (from ``load``), then each analysis of ``names`` over them."""
    chosen = tuple(ANALYSES_BY_NAME[name] for name in names)
    tables = load(needed_columns(chosen))
    return run_all(tables, (TopOptions(top=top),), analyses=chosen)


def by_rank(
    executor: cf.Executor, loaders: Sequence[Loader], names: Sequence[str] = RANK_LOCAL, *, top: int = 10
) -> dict[str, pa.Table]:
    """Each analysis of ``names`` over every rank, one task per rank (``loaders``, in rank order)."""
    unknown = [name for name in names if name not in RANK_LOCAL]
    if unknown:
        raise ValueError(f"not computed rank by rank: {', '.join(unknown)}; choose from {', '.join(RANK_LOCAL)}")
    if not loaders:
        raise ValueError("no ranks to analyse")
    futures = [executor.submit(rank_results, load, tuple(names), top) for load in loaders]
    parts = [future.result() for future in futures]
    return {name: concat_widened([part[name] for part in parts]) for name in names}


@dataclass(frozen=True)
class RankPart:
    """One rank's share of a summary: its rows of the rank analyses asked for (and of those the
    across-ranks ones read), and the tables the across-ranks analyses read of it (``run_tables``)."""

    results: dict[str, pa.Table]
    run_tables: dict[str, pa.Table]


def run_rows(events: pa.Table) -> pa.Table:
    """The events of one rank that the across-ranks analyses and rules read: its ``ProfilerStep#N``
    rows, its collectives (host calls and device work), and its first and last events (its wall time)."""
    keep = starts_with(events, "name", STEP_PREFIX) | is_in(events, "kind", (kinds.COLLECTIVE,))
    keep |= not_empty(events, "collective")
    if events.num_rows:
        ts_ns = ints(events, "ts_ns")
        keep[int(np.argmin(ts_ns))] = keep[int(np.argmax(ts_ns + ints(events, "dur_ns")))] = True
    return _own_dictionaries(where(events, keep))


def _own_dictionaries(table: pa.Table) -> pa.Table:
    """``table`` with each dictionary column encoded again over its own values: a few rows taken
    from a rank keep its whole dictionaries (every name of the rank, Python frames included)
    otherwise, in every share until the shares are combined."""
    for at, field in enumerate(table.schema):
        if pa.types.is_dictionary(field.type):
            values = table.column(at).cast(field.type.value_type)
            table = table.set_column(at, field.name, pc.dictionary_encode(values).cast(field.type))
    return table


def rank_part(
    tables: Tables,
    names: Sequence[str],
    options: Iterable[AnalysisOptions] = (),
    *,
    windowless: Tables | None = None,
    threads: int = 1,
    also: Sequence[Callable[[], object]] = (),
    after_each: Callable[[], object] | None = None,
) -> tuple[RankPart, list[object]]:
    """The share of ``names``' analyses of the one rank of ``tables``; ``windowless``: the rank's tables
    before a window cut them, which a ``windowless`` analysis (``steady_state``) reads to say where
    the window is. The analyses and the calls of ``also`` (the rank's findings) run on ``threads``
    threads that share the rank's splits and masks; what ``also`` gave comes back beside the share.
    ``after_each``: called after each analysis and call of ``also`` (None: nothing)."""
    given, ready = tuple(options), prepared(tables, threads)
    of_ranks = [name for name in names if ANALYSES_BY_NAME[name].scope == "rank"]
    wanted = dict.fromkeys([*of_ranks, *(read for name in names for read in ANALYSES_BY_NAME[name].shares.reads)])
    calls = [*also, *(_rank_call(ANALYSES_BY_NAME[name], ready, given, windowless) for name in wanted)]
    done = threaded(calls, threads, after_each)  # the findings (the longest) first: the threads end together
    results: dict[str, pa.Table] = dict(zip(wanted, done[len(also) :], strict=True))
    return RankPart(results, run_tables(ready)), done[: len(also)]


def _rank_call(
    analysis: Analysis, ready: Tables, given: tuple[AnalysisOptions, ...], windowless: Tables | None
) -> Callable[[], pa.Table]:
    """The call that gives ``analysis``'s rows of one rank (its share's, where it has a ``rank_fn``)."""
    if analysis.windowless and windowless is not None:
        return functools.partial(analysis, prepared(windowless))
    if analysis.shares.rank_fn is not None:
        return functools.partial(replace(analysis, fn=analysis.shares.rank_fn, options=None), ready)
    return functools.partial(analysis, ready, analysis.pick(given))


def run_tables(tables: Tables) -> dict[str, pa.Table]:
    """What the across-ranks analyses and rules read of one rank's (prepared) tables: its
    ``run_rows``, sessions and warnings."""
    found = {name: tables[name] for name in ("sessions", "warnings") if name in tables}
    if "events" in tables:  # (``--only`` analyses that read no events read none)
        found["events"] = run_rows(tables["events"])
    return found


def combined(
    parts: Sequence[RankPart],
    names: Sequence[str],
    options: Iterable[AnalysisOptions] = (),
    *,
    run_parts: Sequence[RankPart] | None = None,
) -> dict[str, pa.Table]:
    """Each analysis of ``names`` over all the ranks of ``parts`` (in rank order), as ``run_all``
    over every rank at once gives it; ``run_parts``: the parts in the order of the ranks in that
    table (its parts' order, where it is not the ranks'), which numbers collective instances."""
    if not parts:
        raise ValueError("no ranks to combine")
    given = tuple(options)
    run_tables = prepared(joined([part.run_tables for part in (run_parts if run_parts is not None else parts)]))
    out = {}
    for name in names:
        analysis = ANALYSES_BY_NAME[name]
        combine = analysis.shares.combine
        if combine is not None:
            read = (*analysis.shares.reads, *((name,) if analysis.scope == "rank" else ()))
            out[name] = combine(run_tables, {each: _rows(parts, each) for each in read})
        elif analysis.scope == "run":
            out[name] = analysis(run_tables, analysis.pick(given))
        else:
            out[name] = _rows(parts, name)
    return out


def joined(parts: Sequence[Mapping[str, pa.Table]]) -> dict[str, pa.Table]:
    """Each table's rows of every part, one part after another."""
    names = dict.fromkeys(name for part in parts for name in part)
    return {name: concat_widened([p[name] for p in parts if name in p]) for name in names}


def _rows(parts: Sequence[RankPart], name: str) -> pa.Table:
    return concat_widened([part.results[name] for part in parts])

"""The per-rank analyses computed rank by rank, on any ``concurrent.futures`` executor (a Dask
cluster's, a process pool), and combined: no process holds more than one rank's rows.

An analysis qualifies when its result is rows per rank that depend on that rank alone, so the
whole result is the ranks' results one after another. ``tests/fleet`` holds every one of them
to that against the analysis over all ranks at once. The across-ranks analyses (``scope`` run)
and the rank -1 rows of ``kernel_type_breakdown`` need every rank's events and are not here.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable, Mapping, Sequence

import pyarrow as pa

from kinetoscope.analysis import ANALYSES, ANALYSES_BY_NAME, TopOptions, needed_columns, run_all
from kinetoscope.analysis.frames import Tables

# Rank-scope analyses that also add rows for all ranks together (rank -1).
_WITH_ALL_RANKS_ROWS = frozenset({"kernel_type_breakdown"})
RANK_LOCAL = tuple(a.name for a in ANALYSES if a.scope == "rank" and a.name not in _WITH_ALL_RANKS_ROWS)

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
    return {name: pa.concat_tables([part[name] for part in parts], promote_options="default") for name in names}

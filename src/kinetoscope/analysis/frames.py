"""Helpers shared by the analyses: tables split per rank, columns as numpy, result tables."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.model import kinds

Tables = Mapping[str, pa.Table]
RankKey = tuple[str, int]

# Kinds of events (``events.kind``, decided by ``model.kinds``) the analyses count.
DEVICE_WORK = kinds.DEVICE_WORK_KINDS
MEMORY_WORK = kinds.MEMORY_WORK_KINDS


def launched_outside(events: pa.Table) -> np.ndarray:
    """Device work with a correlation id whose launching call is not in the trace: launched before
    the profiler started (Kineto records what was still running when the window opened)."""
    work = is_in(events, "kind", DEVICE_WORK)
    return work & (ints(events, "launch_id") < 0) & (ints(events, "correlation") >= 0)


def positions(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Row position of each id of ``wanted`` in ``ids`` (-1 when absent)."""
    if not len(ids):
        return np.full(len(wanted), -1, dtype=np.int64)
    order = np.argsort(ids)
    at = np.minimum(np.searchsorted(ids[order], wanted), len(ids) - 1)
    return np.where(ids[order][at] == wanted, order[at], -1)


def per_rank(table: pa.Table) -> Iterator[tuple[RankKey, pa.Table]]:
    """``((run, rank), rows of that rank)`` for every rank present, in (run, rank) order."""
    if table.num_rows == 0:
        return
    ordered = table.take(pc.sort_indices(table, [("run", "ascending"), ("rank", "ascending")]))
    runs = ordered.column("run").to_pylist()
    ranks = ordered.column("rank").to_numpy(zero_copy_only=False)
    start = 0
    for end in [*(np.flatnonzero(np.diff(ranks) != 0) + 1).tolist(), len(ranks)]:
        for s, e in _split_runs(runs, start, end):
            yield (runs[s], int(ranks[s])), ordered.slice(s, e - s)
        start = end


def _split_runs(runs: list[str], start: int, end: int) -> Iterator[tuple[int, int]]:
    begin = start
    for pos in range(start + 1, end):
        if runs[pos] != runs[pos - 1]:
            yield begin, pos
            begin = pos
    yield begin, end


def ints(table: pa.Table, name: str) -> np.ndarray:
    column = table.column(name)
    values: np.ndarray = column.to_numpy() if column.null_count == 0 else pc.fill_null(column, -1).to_numpy()
    return values


def strings(table: pa.Table, name: str) -> list[str]:
    return [str(v) for v in table.column(name).to_pylist()]


def is_in(table: pa.Table, name: str, values: Sequence[str]) -> np.ndarray:
    column = table.column(name)
    if pa.types.is_dictionary(column.type):
        column = column.cast(pa.string())
    return np.asarray(pc.is_in(column, value_set=pa.array(list(values), pa.string())).to_numpy(zero_copy_only=False))


def not_empty(table: pa.Table, name: str) -> np.ndarray:
    column = table.column(name)
    if pa.types.is_dictionary(column.type):
        column = column.cast(pa.string())
    return np.asarray(pc.fill_null(pc.not_equal(column, ""), False).to_numpy(zero_copy_only=False))


def rows(schema: Sequence[tuple[str, pa.DataType]], records: list[dict[str, Any]]) -> pa.Table:
    """A result table from dict records (missing keys are null)."""
    arrow_schema = pa.schema(list(schema))
    return pa.Table.from_pylist(records, schema=arrow_schema)


def pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 2) if whole > 0 else 0.0


def where(table: pa.Table, mask: np.ndarray) -> pa.Table:
    return table.filter(pa.array(mask))

"""Helpers shared by the analyses: tables split per rank, columns as numpy, result tables."""

from __future__ import annotations

import itertools
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
    """``((run, rank), rows of that rank)`` for every rank present, in (run, rank) order, rows in
    their order within each rank (a table of one rank is given back as is)."""
    if table.num_rows == 0:
        return
    runs = table.column("run")
    encoded = pc.dictionary_encode(runs.cast(pa.string()) if pa.types.is_dictionary(runs.type) else runs)
    encoded = encoded.combine_chunks()
    names = [str(name) for name in encoded.dictionary.to_pylist()]
    by_name = np.argsort(np.argsort(np.asarray(names, dtype=object)))  # each run's place in name order
    ranks = ints(table, "rank").astype(np.int64)
    keys = by_name[encoded.indices.to_numpy(zero_copy_only=False)].astype(np.int64) << 33 | (ranks + (1 << 31))
    if (keys == keys[0]).all():
        yield (names[int(encoded.indices[0].as_py())], int(ranks[0])), table
        return
    order = np.argsort(keys, kind="stable")
    bounds = [0, *(np.flatnonzero(np.diff(keys[order]) != 0) + 1).tolist(), len(order)]
    for start, end in itertools.pairwise(bounds):
        first = int(order[start])
        yield (names[int(encoded.indices[first].as_py())], int(ranks[first])), table.take(order[start:end])


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

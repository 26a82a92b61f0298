"""Rows chosen from a table: by a mask, of one rank, the device work, the work launched before the
profiling window, a view without ``args``."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables import reuse
from kinetoscope.analysis._tables.column_arrays import ints
from kinetoscope.analysis._tables.masks import is_in
from kinetoscope.analysis._tables.rank_slices import per_rank, rows_of, same_rows, source_of
from kinetoscope.model import kinds, profiling_window

# Kinds of events (``events.kind``, decided by ``model.kinds``) the analyses count.
DEVICE_WORK = kinds.DEVICE_WORK_KINDS
MEMORY_WORK = kinds.MEMORY_WORK_KINDS


def launched_outside(events: pa.Table) -> np.ndarray:
    """Device work launched before the window opened (``model.profiling_window``)."""
    work = is_in(events, "kind", DEVICE_WORK)
    return profiling_window.launched_before_rows(work, ints(events, "launch_id"), ints(events, "correlation"))


def of_rank(table: pa.Table, run: str, rank: int) -> pa.Table:
    """The rows of ``table`` of one (run, rank), in their order (a table without ranks: all of it):
    its part of the table's ``per_rank`` split, found once inside ``reuse.reusing()`` for every rank
    (and the analyses), not a filter of every row per rank."""
    if not {"run", "rank"} <= set(table.column_names):
        return table
    found = next((rows for key, rows in per_rank(table) if key == (run, rank)), None)
    return table.slice(0, 0) if found is None else found


def where(table: pa.Table, mask: np.ndarray) -> pa.Table:
    """The rows of ``table`` where ``mask`` is true, in their order; a few rows of many are taken
    by position (one gather per column beats a filter's pass over every row)."""
    chosen = np.flatnonzero(mask)
    if 0 < len(chosen) * _FEW_ROWS < len(mask):
        return _taken(table, chosen)
    return _filtered(table, pa.array(mask))


def _taken(table: pa.Table, rows: np.ndarray) -> pa.Table:
    """``table.take(rows)`` (ascending positions), a column of many chunks (``args``' row groups)
    gathered chunk by chunk (``gathered``)."""
    chunked = [name for name in table.column_names if table.column(name).num_chunks > 1]
    if not chunked:
        return table.take(rows)
    whole = table.drop_columns(chunked).take(rows)
    columns = [gathered(table.column(n), rows) if n in chunked else whole.column(n) for n in table.column_names]
    return pa.Table.from_arrays(columns, schema=table.schema)


def gathered(column: pa.ChunkedArray, rows: np.ndarray) -> pa.ChunkedArray:
    """The entries of ``column`` at the positions ``rows``, in one chunk, gathered chunk by chunk: a
    chunked column's ``take`` first joins all its chunks (``args`` keeps one per row group), a copy
    of every text to read a few. Rows out of order are gathered in order, then put back."""
    if column.num_chunks <= 1:
        return column.take(pa.array(rows, pa.int64()))
    if len(rows) > 1 and bool(np.any(rows[1:] < rows[:-1])):
        order = np.argsort(rows, kind="stable")
        return gathered(column, rows[order]).take(pa.array(np.argsort(order, kind="stable")))
    starts = np.cumsum([0, *(len(chunk) for chunk in column.chunks)])
    which = np.searchsorted(starts, rows, side="right") - 1
    bounds = np.searchsorted(which, np.arange(column.num_chunks + 1))
    parts = [
        chunk.take(pa.array(rows[bounds[i] : bounds[i + 1]] - starts[i], pa.int64()))
        for i, chunk in enumerate(column.chunks)
        if bounds[i + 1] > bounds[i]
    ]
    return pa.chunked_array([pa.concat_arrays(parts) if parts else pa.array([], column.type)], column.type)


def _filtered(table: pa.Table, mask: pa.Array) -> pa.Table:
    """``table.filter(mask)``, with the columns in one chunk (all but ``args`` in a ``prepared``
    table) filtered together and kept in one chunk: a table's filter cuts every column at the
    chunk boundaries of any (``args``' row groups), and a column of many chunks is copied each
    time it is read as numpy."""
    chunked = [name for name in table.column_names if table.column(name).num_chunks > 1]
    if not chunked or len(chunked) == table.num_columns:
        return table.filter(mask)
    whole = table.drop_columns(chunked).filter(mask)
    columns = [table.column(n).filter(mask) if n in chunked else whole.column(n) for n in table.column_names]
    return pa.Table.from_arrays(columns, schema=table.schema)


_FEW_ROWS = 64  # ``where`` takes rows by position when at most one row in this many is kept


def without_args(table: pa.Table) -> pa.Table:
    """``table`` without its ``args`` column (zero-copy), one view per table inside ``reuse.reusing()``
    (the one ``Analysis`` hands an analysis that reads no args), noted as holding its rows."""
    if "args" not in table.column_names:
        return table
    return reuse.cached(table, "without_args", lambda: same_rows(table.drop_columns(["args"]), table))


def device_work_rows(events: pa.Table) -> pa.Table:
    """The rows of ``events`` that are device work (kernels, copies, sets), in their order; asked
    of each rank by many analyses, so filtered once per table inside ``reuse.reusing()``."""
    return reuse.cached(events, "device_work", lambda: _device_work_rows(events))


def _with_args(events: pa.Table) -> pa.Table:
    """The device work rows of ``events`` (which hold ``args``): those of its view without args, which
    most analyses read, and their ``args`` beside them, so the other columns are filtered once, not
    once for each."""
    lean = device_work_rows(without_args(events))
    args = where(events.select(["args"]), is_in(events, "kind", DEVICE_WORK)).column("args")
    columns = [args if name == "args" else lean.column(name) for name in events.column_names]
    return pa.Table.from_arrays(columns, schema=events.schema)


def _device_work_rows(events: pa.Table) -> pa.Table:
    """Of rows of another table (a rank's slice, a view with fewer columns), their part of that
    table's device work rows, so the whole table is filtered once and each rank's part is a slice."""
    whole, start = source_of(events)
    if "args" in whole.column_names and "args" not in events.column_names:
        whole = without_args(whole)  # a view without args: its rows are filtered without the largest column
    if whole is events and "args" in events.column_names:
        return _with_args(events)
    if whole is events:
        return where(events, is_in(events, "kind", DEVICE_WORK))
    work = is_in(whole, "kind", DEVICE_WORK)
    before, count = int(np.count_nonzero(work[:start])), int(np.count_nonzero(work[start : start + events.num_rows]))
    part = rows_of(device_work_rows(whole), before, count)
    if part.column_names == events.column_names:
        return part
    return same_rows(part.select(events.column_names), part)

"""Rows of a table by event id: the positions of wanted ids, by the quickest lookup their spread allows."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables.column_arrays import ints, read_only
from kinetoscope.analysis._tables.rank_slices import for_rows


def positions(ids: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Row position of each id of ``wanted`` in ``ids`` (-1 when absent)."""
    return _lookup(ids)(wanted)


def id_positions(table: pa.Table, wanted: np.ndarray) -> np.ndarray:
    """``positions(ints(table, "id"), wanted)``, the lookup of the table's ids built once per run of
    rows inside ``reuse.reusing()`` (a rank's launch calls, parents and callers are all looked up)."""
    return id_lookup(table)(wanted)


Lookup = Callable[[np.ndarray], np.ndarray]


def id_lookup(table: pa.Table) -> Lookup:
    """``id_positions`` of ``table`` as a function of the wanted ids, to keep beyond a ``reuse.reusing()`` block."""
    return for_rows(table, "id_lookup", lambda: _lookup(ints(table, "id")))


def _lookup(ids: np.ndarray) -> Lookup:
    """A function from wanted ids to their rows in ``ids`` (-1 when absent), what it needs of ``ids``
    found once."""
    if not len(ids):
        return lambda wanted: np.full(len(wanted), -1, dtype=np.int64)
    in_order = len(ids) == 1 or bool((ids[1:] > ids[:-1]).all())  # ingest writes ids in row order
    first, last = (int(ids[0]), int(ids[-1])) if in_order else (int(ids.min()), int(ids.max()))
    span = last - first + 1
    if in_order and span == len(ids):  # ids k..k+n-1 (a rank's slice of 0..n-1): id - k is its row
        return functools.partial(_offset_positions, first, len(ids))
    if span <= _DENSE_SPAN * len(ids):  # ids k.. with gaps, in any order (unique): a row per id in the span
        return functools.partial(_dense_positions, first, _dense_rows(ids, first, span))
    if in_order:
        return functools.partial(_sorted_positions, ids, None)
    order = np.argsort(ids)
    return functools.partial(_sorted_positions, ids[order], order)


_DENSE_SPAN = 8  # ids spread over at most this many times their count are looked up in a dense table


def _offset_positions(first: int, count: int, wanted: np.ndarray) -> np.ndarray:
    found = _wide(wanted)  # a new array: changed in place
    found -= first
    found[(found < 0) | (found >= count)] = -1
    return found


def narrow_positions(found: np.ndarray, rows: int) -> np.ndarray:
    """``found`` (positions in a table of ``rows`` rows, -1: none) in 32 bits where they fit: half
    the memory, for positions kept while a summary runs."""
    return found.astype(np.int32) if rows < 2**31 else found


def _dense_rows(ids: np.ndarray, first: int, span: int) -> np.ndarray:
    """Each id's row written at ``id - first`` (``first``: the least id) of a table of the span (-1
    between them); the last slot, -1, for any wanted id outside the span."""
    row_of = np.full(span + 1, -1, dtype=np.int64)
    row_of[ids - first] = np.arange(len(ids), dtype=np.int64)
    return read_only(row_of)


def _dense_positions(first: int, row_of: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    span = len(row_of) - 1
    at = _wide(wanted)
    at -= first
    found: np.ndarray = row_of[np.where((at >= 0) & (at < span), at, span)]
    return found


def _wide(wanted: np.ndarray) -> np.ndarray:
    """A 64-bit copy of ``wanted``: ids may be read in 32 bits (where all those read fit) and
    the table's first id, subtracted from them, not fit 32."""
    found: np.ndarray = wanted.astype(np.int64)
    return found


def _sorted_positions(ordered: np.ndarray, order: np.ndarray | None, wanted: np.ndarray) -> np.ndarray:
    """Rows by binary search in the sorted ids ``ordered`` (``order``: their rows; None: in row order)."""
    at = np.minimum(np.searchsorted(ordered, wanted), len(ordered) - 1)
    found: np.ndarray = np.where(ordered[at] == wanted, at if order is None else order[at], -1)
    return found

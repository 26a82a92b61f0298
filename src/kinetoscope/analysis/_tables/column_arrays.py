"""Columns of a table as numpy: integers, strings, a string column's codes and tests on its
values, run once per distinct value where the column is dictionary-encoded."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def shared_dictionary(column: pa.ChunkedArray) -> list[str] | None:
    """The one dictionary of every chunk of a dictionary column (None: not dictionary, or not one)."""
    if not pa.types.is_dictionary(column.type) or not column.num_chunks:
        return None
    first = column.chunk(0).dictionary
    if not all(chunk.dictionary.equals(first) for chunk in column.chunks[1:]):
        return None
    return [str(value) for value in first.to_pylist()]


def dictionary_indices(column: pa.ChunkedArray) -> np.ndarray:
    """The dictionary indices of every row of a dictionary column, null as -1."""
    found: np.ndarray = index_array(column).astype(np.int64, copy=False)
    return found


def index_array(column: pa.ChunkedArray) -> np.ndarray:
    """``dictionary_indices`` in the column's own index type: a view of the indices of a column of one chunk
    without nulls (a rank's slice of a ``prepared`` table), so indexing by them copies nothing first."""
    if column.num_chunks == 1 and column.null_count == 0:
        view: np.ndarray = column.chunk(0).indices.to_numpy()
        return view
    indices = pa.chunked_array([chunk.indices for chunk in column.chunks], column.type.index_type)
    found: np.ndarray = pc.fill_null(indices, -1).to_numpy()
    return found


def ints(table: pa.Table, name: str) -> np.ndarray:
    column = table.column(name)
    values: np.ndarray = column.to_numpy() if column.null_count == 0 else pc.fill_null(column, -1).to_numpy()
    return values


def strings(table: pa.Table, name: str) -> list[str]:
    return [str(v) for v in table.column(name).to_pylist()]


def codes(table: pa.Table, name: str) -> tuple[np.ndarray, list[str]]:
    """(each row's index into the distinct values, the distinct values) of a string column; a null
    is the value ``""``. From the column's dictionary where it has one, else encoded once; no
    Python per row."""
    column = table.column(name)
    shared = shared_dictionary(column)
    if shared is not None and len(set(shared)) == len(shared):
        found = dictionary_indices(column)
        if not (found < 0).any():
            return found, shared
        if "" not in shared:
            shared = [*shared, ""]
        return np.where(found < 0, shared.index(""), found), shared
    if pa.types.is_dictionary(column.type):
        column = column.cast(pa.string())
    encoded = pc.dictionary_encode(pc.fill_null(column, "")).combine_chunks()
    values = [str(v) for v in encoded.dictionary.to_pylist()]
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), values


def code_view(table: pa.Table, name: str) -> tuple[np.ndarray, list[str]]:
    """``codes`` without a copy where the column allows it: its dictionary indices as they are (in
    the column's index type, a view) for a column of one chunk without nulls whose one dictionary
    holds each value once; else ``codes``. For callers that only index by the codes: an int64 copy
    of them costs 8 bytes per row."""
    column = table.column(name)
    shared = shared_dictionary(column)
    if shared is not None and column.num_chunks == 1 and not column.null_count and len(set(shared)) == len(shared):
        return index_array(column), shared
    return codes(table, name)


def string_mask(table: pa.Table, name: str, test: Callable[[pa.Array], pa.Array]) -> np.ndarray:
    """``test`` (a boolean Arrow function of strings) for each row of a string column, null as False.
    On a dictionary column it runs over the dictionary, not over every row."""
    column = table.column(name)
    if not pa.types.is_dictionary(column.type):
        found = pc.fill_null(test(column), False)
        return np.asarray(found.to_numpy(zero_copy_only=False), dtype=bool)
    if column.num_chunks and all(c.dictionary.equals(column.chunk(0).dictionary) for c in column.chunks[1:]):
        chunks = [column]  # one dictionary: one test
    else:
        chunks = [pa.chunked_array([chunk]) for chunk in column.chunks]
    parts = [_gathered(_on_dictionary(chunk.chunk(0).dictionary, test), index_array(chunk)) for chunk in chunks]
    mask: np.ndarray = np.concatenate(parts) if parts else np.zeros(0, dtype=bool)
    return mask


def _gathered(found: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """``found[indices]`` (``found`` ends with False, for index -1), without the gather where one
    comparison gives it: no value true, one value true, or every value but null's true."""
    hits = np.flatnonzero(found)
    if not len(hits):
        return np.zeros(len(indices), dtype=bool)
    if len(hits) == 1:
        one: np.ndarray = indices == hits[0]
        return one
    if len(hits) == len(found) - 1:
        every: np.ndarray = indices >= 0
        return every
    gathered: np.ndarray = np.take(found, indices)
    return gathered


def _on_dictionary(values: pa.Array, test: Callable[[pa.Array], pa.Array]) -> np.ndarray:
    """``test`` of each dictionary value, then False for index -1 (a null row)."""
    found = np.asarray(pc.fill_null(test(values), False).to_numpy(zero_copy_only=False), dtype=bool)
    with_null: np.ndarray = np.append(found, False)
    return with_null


def encoded(column: pa.ChunkedArray | pa.Array, widened: bool = True) -> tuple[np.ndarray, pa.Array]:
    """(each row's index into the distinct values, -1 for null; the distinct values) of a string
    column: its own dictionary where all chunks share one, else dictionary-encoded once. Not
    ``widened``: a dictionary column's indices in its own index type (``index_array``: a view,
    where the column allows it), for callers that only index by them and test them against 0."""
    chunked = column if isinstance(column, pa.ChunkedArray) else pa.chunked_array([column])
    shared = shared_dictionary(chunked)
    if shared is not None and len(set(shared)) == len(shared):
        indices = dictionary_indices(chunked) if widened else index_array(chunked)
        return indices, chunked.chunk(0).dictionary.cast(pa.string())
    strings = chunked.cast(pa.string()) if pa.types.is_dictionary(chunked.type) else chunked
    found = pc.dictionary_encode(strings).combine_chunks() if strings.num_chunks else None
    if found is None:
        return np.zeros(0, dtype=np.int64), pa.array([], pa.string())
    return pc.fill_null(found.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64), found.dictionary


def read_only(values: np.ndarray) -> np.ndarray:
    """``values``, made read-only: an array kept for others to read (``reuse``) is never changed."""
    values.flags.writeable = False
    return values

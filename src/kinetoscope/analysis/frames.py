"""Helpers shared by the analyses: tables split per rank, columns as numpy, result tables."""

from __future__ import annotations

import concurrent.futures as cf
import functools
import itertools
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis import code_groups, reuse, shapes
from kinetoscope.model import kinds, profiling_window

Tables = Mapping[str, pa.Table]
T = TypeVar("T")
RankKey = tuple[str, int]

# Kinds of events (``events.kind``, decided by ``model.kinds``) the analyses count.
DEVICE_WORK = kinds.DEVICE_WORK_KINDS
MEMORY_WORK = kinds.MEMORY_WORK_KINDS


def launched_outside(events: pa.Table) -> np.ndarray:
    """Device work launched before the window opened (``model.profiling_window``)."""
    work = is_in(events, "kind", DEVICE_WORK)
    return profiling_window.launched_before_rows(work, ints(events, "launch_id"), ints(events, "correlation"))


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
    if len(ids) == 1 or bool((ids[1:] > ids[:-1]).all()):  # ingest writes ids in row order: no sort
        span = int(ids[-1] - ids[0]) + 1
        if span == len(ids):  # ids k..k+n-1 (a rank's slice of 0..n-1): id - k is its row
            return functools.partial(_offset_positions, int(ids[0]), len(ids))
        if span <= _DENSE_SPAN * len(ids):  # ids k.. with gaps: a row per id in the span, one gather
            return functools.partial(_dense_positions, int(ids[0]), _dense_rows(ids, span))
        return functools.partial(_sorted_positions, ids, None)
    order = np.argsort(ids)
    return functools.partial(_sorted_positions, ids[order], order)


_DENSE_SPAN = 8  # ids spread over at most this many times their count are looked up in a dense table


def _offset_positions(first: int, count: int, wanted: np.ndarray) -> np.ndarray:
    at = wanted - first
    found: np.ndarray = np.where((at >= 0) & (at < count), at, -1).astype(np.int64)
    return found


def _dense_rows(ids: np.ndarray, span: int) -> np.ndarray:
    """Each id's row written at ``id - ids[0]`` of a table of the span (-1 between them); the last
    slot, -1, for any wanted id outside the span."""
    row_of = np.full(span + 1, -1, dtype=np.int64)
    row_of[ids - ids[0]] = np.arange(len(ids), dtype=np.int64)
    return read_only(row_of)


def _dense_positions(first: int, row_of: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    span = len(row_of) - 1
    at = wanted - first
    found: np.ndarray = row_of[np.where((at >= 0) & (at < span), at, span)]
    return found


def _sorted_positions(ordered: np.ndarray, order: np.ndarray | None, wanted: np.ndarray) -> np.ndarray:
    """Rows by binary search in the sorted ids ``ordered`` (``order``: their rows; None: in row order)."""
    at = np.minimum(np.searchsorted(ordered, wanted), len(ordered) - 1)
    found: np.ndarray = np.where(ordered[at] == wanted, at if order is None else order[at], -1)
    return found


def per_rank(table: pa.Table) -> Iterator[tuple[RankKey, pa.Table]]:
    """``((run, rank), rows of that rank)`` for every rank present, in (run, rank) order, rows in
    their order within each rank. A dataset's table holds each rank's rows together (one partition
    after another), so each rank is a zero-copy slice; rows of a rank spread through the table are
    gathered instead. Inside ``reuse.reusing()`` a table is split once."""
    yield from reuse.cached(table, "per_rank", lambda: list(_split_per_rank(table)))


def _split_per_rank(table: pa.Table) -> Iterator[tuple[RankKey, pa.Table]]:
    if table.num_rows == 0:
        return
    parent = reuse.peek(table, _SOURCE)
    found = reuse.peek(parent[0], "per_rank") if isinstance(parent, tuple) else None
    if isinstance(found, list) and any(part is table for _, part in found):  # one rank's rows of a split table
        yield from [(key, part) for key, part in found if part is table]
        return
    whole, start = _source(table)
    if whole is not table and start == 0 and whole.num_rows == table.num_rows:  # a view: the same blocks
        blocks = [(key, reuse.peek(part, _SOURCE), part.num_rows) for key, part in per_rank(whole)]
        if all(isinstance(found, tuple) for _, found, _ in blocks):
            for key, found, count in blocks:
                yield key, rows_of(table, int(found[1]), count)  # type: ignore[index]
            return
    keys_at, key_of, firsts = _rank_keys(table)
    first_keys = keys_at(firsts)
    if len(np.unique(first_keys)) == len(firsts):  # one block per rank
        ends = np.append(firsts[1:], table.num_rows)
        for block in np.argsort(first_keys, kind="stable").tolist():
            start = int(firsts[block])
            yield key_of(start), rows_of(table, start, int(ends[block]) - start)
        return
    keys = keys_at(None)
    order = np.argsort(keys, kind="stable")
    bounds = [0, *(np.flatnonzero(np.diff(keys[order]) != 0) + 1).tolist(), len(order)]
    for start, end in itertools.pairwise(bounds):
        yield key_of(int(order[start])), table.take(order[start:end])


def rows_of(table: pa.Table, start: int, count: int) -> pa.Table:
    """``table.slice(start, count)``, noted inside ``reuse.reusing()`` as rows of ``table`` so masks
    (``is_in``, ``starts_with``, ``not_empty``) are found once on the whole table and sliced."""
    return reuse.cached(table, ("rows_of", start, count), lambda: _noted_slice(table, start, count))


def _noted_slice(table: pa.Table, start: int, count: int) -> pa.Table:
    part = table.slice(start, count)
    reuse.cached(part, _SOURCE, lambda: (table, start))
    return part


def same_rows(view: pa.Table, table: pa.Table) -> pa.Table:
    """``view`` (``table`` with fewer columns), noted inside ``reuse.reusing()`` as holding the rows
    of ``table``, so its masks are those of ``table``."""
    reuse.cached(view, _SOURCE, lambda: (table, 0))
    return view


_SOURCE = "rows_of"


def for_rows(table: pa.Table, key: Hashable, make: Callable[[], T]) -> T:
    """``make()``, found once per run of rows of a table inside ``reuse.reusing()``: the same for a
    rank's slice and for that slice of a view with fewer columns (``make`` reads no column a view drops)."""
    whole, start = _source(table)
    return reuse.cached(whole, (key, start, table.num_rows), make)


def concatenated(parts: Sequence[pa.Table]) -> pa.Table:
    """``parts`` one after another; when they are a table's rows from its first to its last (its
    ranks' ``rows_of`` in order), that table itself, so what was found on it is found again."""
    whole, at = None, 0
    for part in parts:
        found = reuse.peek(part, _SOURCE)
        if not isinstance(found, tuple) or (whole is not None and found[0] is not whole) or found[1] != at:
            return pa.concat_tables(list(parts), promote_options="default")
        whole, at = found[0], at + part.num_rows
    if isinstance(whole, pa.Table) and at == whole.num_rows:
        return whole
    return pa.concat_tables(list(parts), promote_options="default")


def _source(table: pa.Table) -> tuple[pa.Table, int]:
    """The table ``table``'s rows were taken from (``rows_of``, ``same_rows``), and where they begin."""
    start = 0
    found = reuse.peek(table, _SOURCE)
    while isinstance(found, tuple):
        table, offset = found
        start += int(offset)
        found = reuse.peek(table, _SOURCE)
    return table, start


def _rank_keys(
    table: pa.Table,
) -> tuple[Callable[[np.ndarray | None], np.ndarray], Callable[[int], RankKey], np.ndarray]:
    """(the rank of the rows at given positions, None: of every row, as one int64 that sorts as
    (run name, rank); the (run, rank) of a row; the first row of each run of rows of one rank)."""
    names, codes = _run_codes(table.column("run"))
    by_name = np.argsort(np.argsort(np.asarray(names, dtype=object)))  # each run's place in name order
    ranks = ints(table, "rank")

    def keys_at(at: np.ndarray | None) -> np.ndarray:
        run, rank = (codes, ranks) if at is None else (codes[at], ranks[at])
        keys: np.ndarray = by_name[run] << 33 | (rank.astype(np.int64) + (1 << 31))
        return keys

    changed = (codes[1:] != codes[:-1]) | (ranks[1:] != ranks[:-1])  # equal codes: equal names
    firsts = np.concatenate([[0], np.flatnonzero(changed) + 1])
    return keys_at, lambda row: (names[codes[row]], int(ranks[row])), firsts


def _run_codes(runs: pa.ChunkedArray) -> tuple[list[str], np.ndarray]:
    """(distinct runs, each row's index into them); a ``prepared`` table's runs are encoded already."""
    shared = _shared_dictionary(runs)
    if shared is not None and len(set(shared)) == len(shared):
        return shared, _indices(runs)
    encoded = pc.dictionary_encode(runs.cast(pa.string()) if pa.types.is_dictionary(runs.type) else runs)
    encoded = encoded.combine_chunks()
    names = [str(name) for name in encoded.dictionary.to_pylist()]
    return names, encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)


def _shared_dictionary(column: pa.ChunkedArray) -> list[str] | None:
    """The one dictionary of every chunk of a dictionary column (None: not dictionary, or not one)."""
    if not pa.types.is_dictionary(column.type) or not column.num_chunks:
        return None
    first = column.chunk(0).dictionary
    if not all(chunk.dictionary.equals(first) for chunk in column.chunks[1:]):
        return None
    return [str(value) for value in first.to_pylist()]


def _indices(column: pa.ChunkedArray) -> np.ndarray:
    """The dictionary indices of every row of a dictionary column, null as -1."""
    found: np.ndarray = _index_array(column).astype(np.int64, copy=False)
    return found


def _index_array(column: pa.ChunkedArray) -> np.ndarray:
    """``_indices`` in the column's own index type: a view of the indices of a column of one chunk
    without nulls (a rank's slice of a ``prepared`` table), so indexing by them copies nothing first."""
    if column.num_chunks == 1 and column.null_count == 0:
        view: np.ndarray = column.chunk(0).indices.to_numpy()
        return view
    indices = pa.chunked_array([chunk.indices for chunk in column.chunks], column.type.index_type)
    found: np.ndarray = pc.fill_null(indices, -1).to_numpy()
    return found


def prepared(tables: Tables, threads: int = 1) -> dict[str, pa.Table]:
    """``tables`` made quick for the analyses, values unchanged but for the ``collective`` of kernels the
    user's communication patterns match (``user_communication.applied``): the events' dictionary columns share
    one dictionary over all chunks, and ``run`` is one of them, so a string test runs once per
    distinct value and a per-rank split reads integers; where the events have ``args``, the input
    shapes of the framework rows are read from them once (``shapes.with_shapes``). ``threads``
    threads copy the columns into one chunk and read the shapes meanwhile (the same table)."""
    out = dict(tables)
    events = tables.get("events")
    if events is None:
        return out
    ready = reuse.cached(events, "prepared", lambda: _prepared_events(events, threads))
    out["events"] = reuse.cached(ready, "prepared", lambda: ready)  # prepared already: as it is
    return out


def _prepared_events(events: pa.Table, threads: int) -> pa.Table:
    from kinetoscope.analysis import user_communication  # it reads these frames

    events = user_communication.applied(events)  # users' communication patterns: the collective column
    if "run" in events.column_names and not pa.types.is_dictionary(events.schema.field("run").type):
        events = events.set_column(events.column_names.index("run"), "run", _encoded_by_chunk(events.column("run")))
    events = events.unify_dictionaries()
    if "layer" not in events.column_names:
        return _one_chunk(events, map)
    if threads <= 1 or "args" not in events.column_names or shapes.source_columns(events) != ["args"]:
        events = _one_chunk(events, map)
        return shapes.with_shapes(events, is_in(events, "layer", ("framework",)))
    with cf.ThreadPoolExecutor(threads, thread_name_prefix="kinetoscope-prepare") as pool:
        found = pool.submit(shapes.shape_columns, events, is_in(events, "layer", ("framework",)))
        events = _one_chunk(events, pool.map)
        return shapes.appended(events, found.result())


def _encoded_by_chunk(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """``column`` dictionary-encoded chunk by chunk (the chunks' dictionaries unified after): a
    chunk of one value throughout (a dataset part's ``run``) without hashing each row. Chunks of
    no rows are left out, as ``pc.dictionary_encode`` leaves them."""
    chunks = []
    for chunk in (chunk for chunk in column.chunks if len(chunk)):
        if not chunk.null_count and pc.all(pc.equal(chunk, chunk[0])).as_py():
            indices = pa.array(np.zeros(len(chunk), dtype=np.int32))
            chunks.append(pa.DictionaryArray.from_arrays(indices, pa.array([chunk[0].as_py()], chunk.type)))
        else:
            chunks.append(pc.dictionary_encode(chunk))
    return pa.chunked_array(chunks, pa.dictionary(pa.int32(), column.type))


def _one_chunk(events: pa.Table, mapping: Callable[..., Iterator[pa.ChunkedArray]]) -> pa.Table:
    """``events`` with every column but ``args`` in one chunk, so a column of a rank's slice reads
    as numpy without a copy and filters run once per column, not once per Parquet row group
    (``args``, the largest, is read by few and stays as it was); each column copied by ``mapping``
    (``map``, or a thread pool's)."""
    names = [name for name in events.column_names if name != "args" and events.column(name).num_chunks > 1]
    combined = mapping(_combined, [events.column(name) for name in names])
    for name, column in zip(names, combined, strict=True):
        events = events.set_column(events.column_names.index(name), name, column)
    return events


def _combined(column: pa.ChunkedArray) -> pa.ChunkedArray:
    return pa.chunked_array([column.combine_chunks()], column.type)


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
    shared = _shared_dictionary(column)
    if shared is not None and len(set(shared)) == len(shared):
        found = _indices(column)
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
    parts = [_gathered(_on_dictionary(chunk.chunk(0).dictionary, test), _index_array(chunk)) for chunk in chunks]
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


def starts_with(table: pa.Table, name: str, prefix: str) -> np.ndarray:
    return _kept_mask(table, ("starts_with", name, prefix), lambda whole: _starts_with(whole, name, prefix))


def _starts_with(table: pa.Table, name: str, prefix: str) -> np.ndarray:
    return string_mask(table, name, lambda strings: pc.starts_with(strings, prefix))


def _kept_mask(table: pa.Table, key: tuple[str, ...], mask_of: Callable[[pa.Table], np.ndarray]) -> np.ndarray:
    """``mask_of(table)``, found once per table inside ``reuse.reusing()``, and for a table of rows
    of another (a rank's slice, a view with fewer columns), that one's mask sliced; a copy, for
    callers may change it."""
    whole, start = _source(table)
    mask: np.ndarray = reuse.cached(whole, key, lambda: mask_of(whole))[start : start + table.num_rows].copy()
    return mask


def encoded(column: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, pa.Array]:
    """(each row's index into the distinct values, -1 for null; the distinct values) of a string
    column: its own dictionary where all chunks share one, else dictionary-encoded once."""
    chunked = column if isinstance(column, pa.ChunkedArray) else pa.chunked_array([column])
    shared = _shared_dictionary(chunked)
    if shared is not None and len(set(shared)) == len(shared):
        return _indices(chunked), chunked.chunk(0).dictionary.cast(pa.string())
    strings = chunked.cast(pa.string()) if pa.types.is_dictionary(chunked.type) else chunked
    found = pc.dictionary_encode(strings).combine_chunks() if strings.num_chunks else None
    if found is None:
        return np.zeros(0, dtype=np.int64), pa.array([], pa.string())
    return pc.fill_null(found.indices, -1).to_numpy(zero_copy_only=False).astype(np.int64), found.dictionary


def is_in(table: pa.Table, name: str, values: Sequence[str]) -> np.ndarray:
    chosen = tuple(values)
    return _kept_mask(table, ("is_in", name, *chosen), lambda whole: _is_in(whole, name, chosen))


def _is_in(table: pa.Table, name: str, values: Sequence[str]) -> np.ndarray:
    wanted = pa.array(list(values), pa.string())
    return string_mask(table, name, lambda strings: pc.is_in(strings, value_set=wanted))


def not_empty(table: pa.Table, name: str) -> np.ndarray:
    return _kept_mask(table, ("not_empty", name), lambda whole: _not_empty(whole, name))


def matches(table: pa.Table, name: str, pattern: str) -> np.ndarray:
    """Whether each row's ``name`` column matches the regular expression ``pattern`` (null: no);
    found once per table inside ``reuse.reusing()``, like ``is_in``."""
    return _kept_mask(table, ("matches", name, pattern), lambda whole: _matches(whole, name, pattern))


def _matches(table: pa.Table, name: str, pattern: str) -> np.ndarray:
    return string_mask(table, name, lambda strings: pc.match_substring_regex(strings, pattern))


def _not_empty(table: pa.Table, name: str) -> np.ndarray:
    return string_mask(table, name, lambda strings: pc.not_equal(strings, ""))


@dataclass(frozen=True)
class Groups:
    """Rows grouped by a code, groups in the order they first occur."""

    code: np.ndarray  # each group's code
    first: np.ndarray  # each group's first row
    rows: np.ndarray  # rows in each group
    sums: list[np.ndarray]  # int64 sum of each value column, per group


def group_sums(code: np.ndarray, values: Sequence[np.ndarray] = ()) -> Groups:
    """``code`` grouped, with the int64 sum of each of ``values`` per group, in numpy, not Python."""
    if _small_codes(code):
        return _counted_groups(code, values)
    present, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    slot_of = np.empty(len(order), dtype=np.int64)
    slot_of[order] = np.arange(len(order))
    slot = slot_of[inverse.reshape(-1)]
    sums = []
    for value in values:
        total = np.zeros(len(order), dtype=np.int64)
        np.add.at(total, slot, value.astype(np.int64))
        sums.append(total)
    counts = np.bincount(slot, minlength=len(order)).astype(np.int64)
    return Groups(present[order], first[order], counts, sums)


def _small_codes(code: np.ndarray) -> bool:
    """Whether ``code`` is integers from 0 to not far over its length (dictionary indices): counted, not sorted."""
    if not len(code) or code.dtype.kind not in "iu":
        return False
    return int(code.min()) >= 0 and int(code.max()) <= 4 * len(code) + 1024


def _counted_groups(code: np.ndarray, values: Sequence[np.ndarray]) -> Groups:
    """``group_sums`` of small non-negative codes: each code's count, first row and sums by index."""
    slots = int(code.max()) + 1
    counts = np.bincount(code, minlength=slots)
    first = np.full(slots, len(code), dtype=np.int64)
    np.minimum.at(first, code, np.arange(len(code), dtype=np.int64))
    present = np.flatnonzero(counts)
    order = present[np.argsort(first[present], kind="stable")]  # groups in the order they first occur
    sums = [code_groups.sums(code, value, slots)[order] for value in values]
    return Groups(order.astype(code.dtype), first[order], counts[order].astype(np.int64), sums)


def most_first(totals: np.ndarray) -> np.ndarray:
    """Positions ordered by descending ``totals``, ties in their order (Python's stable ``sorted``)."""
    order: np.ndarray = np.argsort(-totals, kind="stable")
    return order


def rows(schema: Sequence[tuple[str, pa.DataType]], records: list[dict[str, Any]]) -> pa.Table:
    """A result table from dict records (missing keys are null)."""
    arrow_schema = pa.schema(list(schema))
    return pa.Table.from_pylist(records, schema=arrow_schema)


def pct(part: float, whole: float) -> float:
    return round(100.0 * part / whole, 2) if whole > 0 else 0.0


def read_only(values: np.ndarray) -> np.ndarray:
    """``values``, made read-only: an array kept for others to read (``reuse``) is never changed."""
    values.flags.writeable = False
    return values


def of_rank(table: pa.Table, run: str, rank: int) -> pa.Table:
    """The rows of ``table`` of one (run, rank), in their order (a table without ranks: all of it)."""
    if not {"run", "rank"} <= set(table.column_names):
        return table
    return where(table, is_in(table, "run", (run,)) & (ints(table, "rank") == rank))


def where(table: pa.Table, mask: np.ndarray) -> pa.Table:
    """The rows of ``table`` where ``mask`` is true, in their order; a few rows of many are taken
    by position (one gather per column beats a filter's pass over every row)."""
    chosen = np.flatnonzero(mask)
    if 0 < len(chosen) * _FEW_ROWS < len(mask):
        return table.take(chosen)
    return _filtered(table, pa.array(mask))


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


def _device_work_rows(events: pa.Table) -> pa.Table:
    """Of rows of another table (a rank's slice, a view with fewer columns), their part of that
    table's device work rows, so the whole table is filtered once and each rank's part is a slice."""
    whole, start = _source(events)
    if "args" in whole.column_names and "args" not in events.column_names:
        whole = without_args(whole)  # a view without args: its rows are filtered without the largest column
    if whole is events:
        return where(events, is_in(events, "kind", DEVICE_WORK))
    work = is_in(whole, "kind", DEVICE_WORK)
    before, count = int(np.count_nonzero(work[:start])), int(np.count_nonzero(work[start : start + events.num_rows]))
    part = rows_of(device_work_rows(whole), before, count)
    if part.column_names == events.column_names:
        return part
    return same_rows(part.select(events.column_names), part)


def frame_labels(frames: pa.Table) -> dict[int, str]:
    """``stack_id`` -> its innermost frame as ``name (file:line)``, from the ``frames`` table."""
    return {
        sid: f"{name} ({file}:{line})"
        for sid, name, file, line in zip(
            ints(frames, "stack_id").tolist(),
            strings(frames, "name"),
            strings(frames, "file"),
            ints(frames, "line").tolist(),
            strict=True,
        )
    }

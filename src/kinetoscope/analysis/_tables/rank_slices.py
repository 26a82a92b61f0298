"""Tables split per rank, and the slices and views of a table noted inside ``reuse.reusing()`` as
rows of it, so what is found once on the whole table serves each of its ranks."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis._tables import reuse
from kinetoscope.analysis._tables.column_arrays import dictionary_indices, ints, shared_dictionary

Tables = Mapping[str, pa.Table]
T = TypeVar("T")
RankKey = tuple[str, int]


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
    whole, start = source_of(table)
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
    whole, start = source_of(table)
    return reuse.cached(whole, (key, start, table.num_rows), make)


def concatenated(parts: Sequence[pa.Table]) -> pa.Table:
    """``parts`` one after another; when they are a table's rows from its first to its last (its
    ranks' ``rows_of`` in order), that table itself, so what was found on it is found again."""
    whole, at = None, 0
    for part in parts:
        found = reuse.peek(part, _SOURCE)
        if not isinstance(found, tuple) or (whole is not None and found[0] is not whole) or found[1] != at:
            return concat_widened(parts)
        whole, at = found[0], at + part.num_rows
    if isinstance(whole, pa.Table) and at == whole.num_rows:
        return whole
    return concat_widened(parts)


def concat_widened(tables: Sequence[pa.Table]) -> pa.Table:
    """``tables`` one after another, where a column's type differs between them only as the
    summary's read and ``prepared`` narrow it (integers in half their width where a rank's values
    fit, a dictionary's indices in 8 bits where its values are few): that column widened, to the
    widest of its integer types and to 32-bit indices. Any other difference of types stays an
    error (``pa.concat_tables``'s default)."""
    seen: dict[str, set[pa.DataType]] = {}
    for field in (field for table in tables for field in table.schema):
        seen.setdefault(field.name, set()).add(field.type)
    widest: dict[str, pa.DataType] = {}
    for name, types in seen.items():
        wide = {_wide_type(kind, types) for kind in types}
        if len(types) > 1 and len(wide) == 1 and None not in wide:
            widest[name] = wide.pop()
    if widest:
        tables = [_widened(table, widest) for table in tables]
    return pa.concat_tables(tables, promote_options="default")


_INTEGERS = (pa.int16(), pa.int32(), pa.int64())  # narrowest first


def _wide_type(kind: pa.DataType, types: set[pa.DataType]) -> pa.DataType | None:
    """The type a narrowed column of ``kind`` is widened to, among the ``types`` it comes in (None:
    not a type that is narrowed): integers to the widest of them."""
    if kind in _INTEGERS:
        return max((other for other in types if other in _INTEGERS), key=_INTEGERS.index)
    if pa.types.is_dictionary(kind):
        return pa.dictionary(pa.int32(), kind.value_type, kind.ordered)
    return None


def _widened(table: pa.Table, types: Mapping[str, pa.DataType]) -> pa.Table:
    for name, kind in types.items():
        at = table.schema.get_field_index(name)
        if at >= 0 and not table.schema.field(at).type.equals(kind):
            table = table.set_column(at, name, table.column(at).cast(kind))
    return table


def source_of(table: pa.Table) -> tuple[pa.Table, int]:
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
    shared = shared_dictionary(runs)
    if shared is not None and len(set(shared)) == len(shared):
        return shared, dictionary_indices(runs)
    encoded = pc.dictionary_encode(runs.cast(pa.string()) if pa.types.is_dictionary(runs.type) else runs)
    encoded = encoded.combine_chunks()
    names = [str(name) for name in encoded.dictionary.to_pylist()]
    return names, encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)

"""Boolean masks of a string column (in a set, starting with, matching, not empty), found once per
table inside ``reuse.reusing()`` and sliced for its ranks."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis._tables import reuse
from kinetoscope.analysis._tables.column_arrays import string_mask
from kinetoscope.analysis._tables.rank_slices import source_of


def starts_with(table: pa.Table, name: str, prefix: str) -> np.ndarray:
    return _kept_mask(table, ("starts_with", name, prefix), lambda whole: _starts_with(whole, name, prefix))


def _starts_with(table: pa.Table, name: str, prefix: str) -> np.ndarray:
    return string_mask(table, name, lambda strings: pc.starts_with(strings, prefix))


def _kept_mask(table: pa.Table, key: tuple[str, ...], mask_of: Callable[[pa.Table], np.ndarray]) -> np.ndarray:
    """``mask_of(table)``, found once per table inside ``reuse.reusing()``, and for a table of rows
    of another (a rank's slice, a view with fewer columns), that one's mask sliced; a new array, for
    callers may change it. Kept a bit per row (``np.packbits``): a summary keeps every mask it found
    until it ends, dozens of them, which as a byte per row cost more than some columns."""
    whole, start = source_of(table)
    packed: np.ndarray = reuse.cached(whole, key, lambda: np.packbits(mask_of(whole)))
    return _unpacked(packed, start, table.num_rows)


def _unpacked(packed: np.ndarray, start: int, rows: int) -> np.ndarray:
    """Rows ``start`` to ``start + rows`` of the boolean mask ``packed`` (``np.packbits``), as a new array."""
    skip = start % 8
    bits = np.unpackbits(packed[start // 8 :], count=skip + rows)
    mask: np.ndarray = bits[skip:].view(bool)
    return mask


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

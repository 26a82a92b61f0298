"""Rows grouped by integer key codes in numpy, in time linear in the rows where the codes allow:
a group number per row, exact int64 sums, and distinct counts per group, with no sort of the rows
(a sort only where the codes are too spread for a table of them)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kinetoscope.analysis._tables import chunks

_EXACT_FLOAT = 2**52  # float64 sums of integers below this are exact (2**53, with a margin)
_DENSE_PER_ROW = 4  # codes spread over at most this many times the rows are counted in a table


def grouped(codes: Sequence[np.ndarray], sizes: Sequence[int]) -> tuple[np.ndarray, int]:
    """(each row's group number 0..groups-1, groups) of the tuples of ``codes`` (each in
    ``0..size-1``); the numbering is arbitrary."""
    rows = len(codes[0]) if codes else 0
    group, span = np.zeros(rows, dtype=np.int64), 1
    for code, size in zip(codes, sizes, strict=True):
        group, span = _numbered(group * max(size, 1) + code, span * max(size, 1))
    return group, span if rows else 0


def _numbered(combined: np.ndarray, span: int) -> tuple[np.ndarray, int]:
    """The distinct values of ``combined`` (in ``0..span-1``) numbered 0..n-1, and n."""
    if span <= max(_DENSE_PER_ROW * len(combined), 1 << 16):
        present = np.bincount(combined, minlength=span) > 0
        number = np.cumsum(present) - 1
        return number[combined], int(present.sum())
    distinct, inverse = np.unique(combined, return_inverse=True)
    return inverse.reshape(-1), len(distinct)


def one_row_each(group: np.ndarray, groups: int) -> np.ndarray:
    """A row of each group (any one: for what all the group's rows share)."""
    found = np.zeros(groups, dtype=np.int64)
    found[group] = np.arange(len(group), dtype=np.int64)
    return found


def sums(group: np.ndarray, values: np.ndarray, groups: int) -> np.ndarray:
    """The exact int64 sum of the integer ``values`` per group: in float64 where the sum of their
    magnitudes is exact there, ``chunks.CHUNK_ROWS`` rows at a time where the groups are far fewer than
    the rows (``np.bincount`` copies its weights to float64, and ``np.abs`` copies the values: 8
    bytes a row each, read whole; each chunk's sums take 8 bytes a group)."""
    if not len(values) or _magnitude(values) < _EXACT_FLOAT:
        size = max(groups, int(group.max()) + 1 if len(group) else 0)
        if size > chunks.CHUNK_ROWS // 8:
            return np.bincount(group, weights=values, minlength=size).astype(np.int64)
        found = np.zeros(size, dtype=np.float64)
        for start in chunks.chunk_starts(len(values)):
            end = start + chunks.CHUNK_ROWS
            found += np.bincount(group[start:end], weights=values[start:end], minlength=size)
        return found.astype(np.int64)
    exact = np.zeros(groups, dtype=np.int64)
    np.add.at(exact, group, values.astype(np.int64, copy=False))
    return exact


def _magnitude(values: np.ndarray) -> float:
    """The sum of the magnitudes of ``values`` in float64, ``chunks.CHUNK_ROWS`` rows at a time."""
    parts = (values[at : at + chunks.CHUNK_ROWS] for at in chunks.chunk_starts(len(values)))
    return sum(float(np.abs(part, dtype=np.int64).sum(dtype=np.float64)) for part in parts)  # |int32 min| fits


def distinct_counts(group: np.ndarray, values: np.ndarray, groups: int) -> np.ndarray:
    """How many distinct integer ``values`` each group holds; by a table of the values where
    each value lies in one group only (a value's group follows from it), else by a sort."""
    if not len(values):
        return np.zeros(groups, dtype=np.int64)
    at = values.astype(np.int64) - int(values.min())
    span = int(at.max()) + 1
    if span <= max(_DENSE_PER_ROW * len(at), 1 << 16):
        group_of = np.full(span, -1, dtype=np.int64)
        group_of[at] = group
        if bool((group_of[at] == group).all()):
            found: np.ndarray = np.bincount(group_of[group_of >= 0], minlength=groups)
            return found
    _, first = np.unique(np.stack([group, at]), axis=1, return_index=True)
    counted: np.ndarray = np.bincount(group[first], minlength=groups)
    return counted

"""Rows grouped by an integer code with int64 sums per group, and positions ordered by total."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kinetoscope.analysis._tables import chunks, code_groups


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
    for start in chunks.chunk_starts(len(code)):  # the rows' positions a chunk at a time
        part = code[start : start + chunks.CHUNK_ROWS]
        np.minimum.at(first, part, np.arange(start, start + len(part), dtype=np.int64))
    present = np.flatnonzero(counts)
    order = present[np.argsort(first[present], kind="stable")]  # groups in the order they first occur
    sums = [code_groups.sums(code, value, slots)[order] for value in values]
    return Groups(order.astype(code.dtype), first[order], counts[order].astype(np.int64), sums)


def most_first(totals: np.ndarray) -> np.ndarray:
    """Positions ordered by descending ``totals``, ties in their order (Python's stable ``sorted``)."""
    order: np.ndarray = np.argsort(-totals, kind="stable")
    return order

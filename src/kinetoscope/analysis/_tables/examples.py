"""Example events: for each row of a grouped analysis, one event that stands for it (its
largest), so a reader can follow the row to the timeline (``example_id``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

EXAMPLE_FIELD = ("example_id", pa.int64())
CHUNK_ROWS = 1 << 20  # rows read at a time: the copies made of them 8 MB each, not 8 bytes per row


def example_ids(group: np.ndarray, weight: np.ndarray, ids: np.ndarray, groups: int) -> np.ndarray:
    """For each group ``0..groups-1`` (``group`` is each row's group), the id of its row with the
    largest ``weight``, the first such row on a tie; -1 for a group with no row. Each group's
    largest weight, then its first row of that weight, in two passes of numpy over ``CHUNK_ROWS``
    rows at a time: no sort, no loop over rows."""
    found = np.full(groups, -1, dtype=np.int64)
    if not len(group):
        return found
    chunks = range(0, len(group), CHUNK_ROWS)  # a chunk of rows at a time: no copies of every row's
    largest = np.full(groups, np.iinfo(np.int64).min, dtype=np.int64)
    for at in chunks:
        np.maximum.at(largest, group[at : at + CHUNK_ROWS], _weights(weight, at))
    first = np.full(groups, len(group), dtype=np.int64)
    for at in chunks:
        part = group[at : at + CHUNK_ROWS]
        hits = np.flatnonzero(_weights(weight, at) == largest[part])
        np.minimum.at(first, part[hits], hits + at)
    present = first < len(group)
    found[present] = ids[first[present]]
    return found


def _weights(weight: np.ndarray, at: int) -> np.ndarray:
    """The ``CHUNK_ROWS`` weights from row ``at`` as signed integers (int64 unless they are narrower
    signed integers already, which compare and take maxima with int64 as they are: no copy)."""
    chunk: np.ndarray = weight[at : at + CHUNK_ROWS]
    return chunk if chunk.dtype in _SIGNED else chunk.astype(np.int64)


_SIGNED = (np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.int64))

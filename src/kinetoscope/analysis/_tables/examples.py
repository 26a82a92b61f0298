"""Example events: for each row of a grouped analysis, one event that stands for it (its
largest), so a reader can follow the row to the timeline (``example_id``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables import chunks

EXAMPLE_FIELD = ("example_id", pa.int64())
_SIGNED = (np.dtype(np.int16), np.dtype(np.int32), np.dtype(np.int64))


def example_ids(group: np.ndarray, weight: np.ndarray, ids: np.ndarray, groups: int) -> np.ndarray:
    """For each group ``0..groups-1`` (``group`` is each row's group), the id of its row with the
    largest ``weight``, the first such row on a tie; -1 for a group with no row. Each group's
    largest weight, then its first row of that weight, in two passes of numpy over ``chunks.CHUNK_ROWS``
    rows at a time: no sort, no loop over rows."""
    found = np.full(groups, -1, dtype=np.int64)
    if not len(group):
        return found
    starts = chunks.chunk_starts(len(group))  # a chunk of rows at a time: no copies of every row's
    largest = np.full(groups, np.iinfo(np.int64).min, dtype=np.int64)
    for at in starts:
        np.maximum.at(largest, group[at : at + chunks.CHUNK_ROWS], _weights(weight, at))
    first = np.full(groups, len(group), dtype=np.int64)
    for at in starts:
        part = group[at : at + chunks.CHUNK_ROWS]
        hits = np.flatnonzero(_weights(weight, at) == largest[part])
        np.minimum.at(first, part[hits], hits + at)
    present = first < len(group)
    found[present] = ids[first[present]]
    return found


def _weights(weight: np.ndarray, at: int) -> np.ndarray:
    """The ``chunks.CHUNK_ROWS`` weights from row ``at`` as signed integers (int64 unless they are narrower
    signed integers already, which compare and take maxima with int64 as they are: no copy)."""
    chunk: np.ndarray = weight[at : at + chunks.CHUNK_ROWS]
    return chunk if chunk.dtype in _SIGNED else chunk.astype(np.int64)


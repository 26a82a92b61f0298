"""Example events: for each row of a grouped analysis, one event that stands for it (its
largest), so a reader can follow the row to the timeline (``example_id``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

EXAMPLE_FIELD = ("example_id", pa.int64())


def example_ids(group: np.ndarray, weight: np.ndarray, ids: np.ndarray, groups: int) -> np.ndarray:
    """For each group ``0..groups-1`` (``group`` is each row's group), the id of its row with the
    largest ``weight``, the first such row on a tie; -1 for a group with no row. Each group's
    largest weight, then its first row of that weight, in two passes of numpy: no sort, no loop
    over rows."""
    found = np.full(groups, -1, dtype=np.int64)
    if not len(group):
        return found
    weight = weight.astype(np.int64, copy=False)
    largest = np.full(groups, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(largest, group, weight)
    hits = np.flatnonzero(weight == largest[group])
    first = np.full(groups, len(group), dtype=np.int64)
    np.minimum.at(first, group[hits], hits)
    present = first < len(group)
    found[present] = ids[first[present]]
    return found

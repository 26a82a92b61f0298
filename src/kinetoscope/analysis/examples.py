"""Example events: for each row of a grouped analysis, one event that stands for it (its
largest), so a reader can follow the row to the timeline (``example_id``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

EXAMPLE_FIELD = ("example_id", pa.int64())


def example_ids(group: np.ndarray, weight: np.ndarray, ids: np.ndarray, groups: int) -> np.ndarray:
    """For each group ``0..groups-1`` (``group`` is each row's group), the id of its row with the
    largest ``weight``, the first such row on a tie; -1 for a group with no row. Two passes of
    numpy's unbuffered ``maximum.at``/``minimum.at``, no sort, no loop over rows."""
    found = np.full(groups, -1, dtype=np.int64)
    if not len(group):
        return found
    weight = weight.astype(np.int64)
    largest = np.full(groups, np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(largest, group, weight)
    held = np.flatnonzero(weight == largest[group])  # the rows with their group's largest weight
    first = np.full(groups, len(group), dtype=np.int64)
    np.minimum.at(first, group[held], held)
    hit = first < len(group)
    found[hit] = ids[first[hit]]
    return found

"""Example events: for each row of a grouped analysis, one event that stands for it (its
largest), so a reader can follow the row to the timeline (``example_id``)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

EXAMPLE_FIELD = ("example_id", pa.int64())


def example_ids(group: np.ndarray, weight: np.ndarray, ids: np.ndarray, groups: int) -> np.ndarray:
    """For each group ``0..groups-1`` (``group`` is each row's group), the id of its row with the
    largest ``weight``, the first such row on a tie; -1 for a group with no row. Sorted once in
    numpy, no loop over rows."""
    found = np.full(groups, -1, dtype=np.int64)
    if not len(group):
        return found
    order = np.lexsort((np.arange(len(group)), -weight.astype(np.int64), group))
    ordered = group[order]
    first = np.r_[True, ordered[1:] != ordered[:-1]]
    found[ordered[first]] = ids[order][first]
    return found

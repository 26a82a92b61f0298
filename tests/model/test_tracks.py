"""Track assignment's memory: the six track-key columns are not all made for every row at once."""

from __future__ import annotations

import tracemalloc

import numpy as np

from kinetoscope.model import kinds, tracks


def test_assign_allocates_under_100_bytes_per_row() -> None:
    # GIVEN 200,000 host rows whose thread changes at every row (no runs to share a code)
    count = 200_000
    rows = np.arange(count)
    keys = {
        "layer": np.full(count, kinds.LAYER_CODES[kinds.FRAMEWORK], np.int8),
        "kind": np.zeros(count, np.int8),
        "pid": np.ones(count, np.int64),
        "tid": (1 + rows % 4).astype(np.int64),
        "device": np.full(count, -1, np.int64),
        "stream": np.full(count, -1, np.int64),
        "ts_ns": rows * 1000,
        "end_ns": rows * 1000 + 500,
    }
    # WHEN their tracks are assigned
    tracemalloc.start()
    try:
        placed = tracks.assign(keys, np.zeros(count, np.int32))
        peak_bytes = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # THEN four tracks, and the peak of what numpy allocated stays under 100 bytes per row (174 before)
    assert len(placed.lanes) == 4 and placed.tid.tolist() == [1, 2, 3, 4]
    assert peak_bytes < 100 * count


def test_lanes_never_overlap_and_keep_time_order() -> None:
    lanes = tracks.Lanes()
    placed = [lanes.place(s, e) for s, e in [(0, 10), (5, 8), (10, 20), (9, 12), (2, 3), (20, 20)]]
    # (5,8) overlaps (0,10): lane 1; (9,12) fits after (5,8); (2,3) starts before every lane's end: lane 2
    assert placed == [0, 1, 0, 1, 2, 0]

"""Track assignment's memory: the six track-key columns are not all made for every row at once."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from kinetoscope.model import kinds, tracks


def _host_rows(count: int) -> dict[str, np.ndarray]:
    """``count`` host rows whose thread changes at every row (no runs to share a code)."""
    rows = np.arange(count)
    return {
        "layer": np.full(count, kinds.LAYER_CODES[kinds.FRAMEWORK], np.int8),
        "kind": np.zeros(count, np.int8),
        "pid": np.ones(count, np.int64),
        "tid": (1 + rows % 4).astype(np.int64),
        "device": np.full(count, -1, np.int64),
        "stream": np.full(count, -1, np.int64),
        "ts_ns": rows * 1000,
        "end_ns": rows * 1000 + 500,
    }


def test_assign_allocates_under_50_bytes_per_row() -> None:
    # GIVEN 200,000 host rows whose thread changes at every row (no runs to share a code)
    count = 200_000
    keys = _host_rows(count)
    # WHEN their tracks are assigned
    tracemalloc.start()
    try:
        placed = tracks.assign(keys, np.zeros(count, np.int32))
        peak_bytes = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # THEN four tracks, and the peak of what numpy allocated stays under 50 bytes per row (45 now; 58
    # while the run starts, the first rows of runs and their tracks were found for every row at once,
    # in 64 bits; 174 before that)
    assert len(placed.lanes) == 4 and placed.tid.tolist() == [1, 2, 3, 4]
    assert placed.of_row.dtype == np.int32
    assert peak_bytes < 50 * count


def test_lanes_never_overlap_and_keep_time_order() -> None:
    lanes = tracks.Lanes()
    placed = [lanes.place(s, e) for s, e in [(0, 10), (5, 8), (10, 20), (9, 12), (2, 3), (20, 20)]]
    # (5,8) overlaps (0,10): lane 1; (9,12) fits after (5,8); (2,3) starts before every lane's end: lane 2
    assert placed == [0, 1, 0, 1, 2, 0]


def _mixed_keys(count: int) -> dict[str, np.ndarray]:
    """Host ops, runtime calls and kernels on two devices' streams, interleaved row by row."""
    rows = np.arange(count)
    layer = (rows % 3).astype(np.int8)  # framework, runtime, device in turn
    kind = np.where(layer == kinds.LAYER_CODES[kinds.DEVICE], kinds.KIND_CODES[kinds.KERNEL], 0).astype(np.int8)
    return {
        "layer": layer,
        "kind": kind,
        "pid": np.where(rows % 7 == 0, 2, 1).astype(np.int64),
        "tid": (1 + rows % 5).astype(np.int64),
        "device": (rows % 2).astype(np.int64),
        "stream": (7 + rows % 3).astype(np.int64),
        "ts_ns": rows * 1000,
        "end_ns": rows * 1000 + 1500,  # overlapping: runtime and device tracks are packed into lanes
    }


def test_tracks_found_chunk_by_chunk_are_those_of_one_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN rows of host threads, runtime calls and device streams, interleaved
    keys = _mixed_keys(5_000)
    whole = tracks.assign(keys, np.zeros(5_000, np.int32))
    # WHEN their distinct tracks are found 3 rows at a time (a run of one track never longer)
    monkeypatch.setattr(tracks, "CHUNK_ROWS", 3)
    chunked = tracks.assign(keys, np.zeros(5_000, np.int32))
    # THEN every row's track and lane, and every track's keys, are the same
    for name in ("of_row", "lane", "layer", "group", "pid", "tid", "device", "stream", "lanes"):
        assert np.array_equal(getattr(chunked, name), getattr(whole, name)), name
        assert getattr(chunked, name).dtype == getattr(whole, name).dtype, name


def test_distinct_tracks_cost_a_chunk_not_the_whole_session(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN 200,000 host rows whose thread changes at every row, their tracks found 16,384 rows at a time
    count = 200_000
    keys = _host_rows(count)
    monkeypatch.setattr(tracks, "CHUNK_ROWS", 16_384, raising=False)
    # WHEN their tracks are assigned
    tracemalloc.start()
    try:
        placed = tracks.assign(keys, np.zeros(count, np.int32))
        peak_bytes = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # THEN the same four tracks, and what numpy allocated peaks under 20 bytes per row (17 now: each
    # row's track in 32 bits, its lane, and a chunk's work; 40 while the run starts, the first rows of
    # runs and their tracks were whole-session arrays in 64 bits; 73 when every column was sorted
    # whole: np.unique's sorted copy, order, mask and inverse of every row at once)
    assert placed.tid.tolist() == [1, 2, 3, 4]
    assert peak_bytes < 20 * count

"""Allocations from memory snapshots: blocks from before recording, and stacks named past the unwinder."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from kinetoscope.analysis import ANALYSES_BY_NAME, needed_columns
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from ..helpers import BASE_NS, write_session, x

MB = 10**6
T0_US = BASE_NS // 1000 + 1_000  # 1 ms into the trace
PY = [{"filename": "model.py", "line": 7, "name": "forward"}, {"filename": "train.py", "line": 3, "name": "main"}]
# torch's C++ frames as _record_memory_history(stacks="all") records them, innermost first
CPP = [
    {"filename": "??", "line": 0, "name": "torch::unwind::unwind()"},
    {"filename": "??", "line": 0, "name": "torch::CapturedTraceback::gather(bool, bool, bool)"},
    {"filename": "??", "line": 0, "name": "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc"},
    {"filename": "??", "line": 0, "name": "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc"},
    {"filename": "??", "line": 0, "name": "at::native::empty_cuda(c10::ArrayRef<long>, ...)"},
    *PY,
]


def _entry(action: str, addr: int, size: int, at_ms: float, frames: list[Any] | None = None) -> dict[str, Any]:
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": T0_US + int(at_ms * 1000),
            "frames": frames or []}


def _block(addr: int, size: int) -> dict[str, Any]:
    return {"address": addr, "size": size, "requested_size": size, "state": "active_allocated", "frames": PY}


def snapshot() -> dict[str, Any]:
    """A (100 MB, allocated before recording, freed at 50 ms) and D (20 MB, before recording, still live)
    are resident when recording starts; B (60 MB) lives 10-100 ms, C (30 MB) from 70 ms on."""
    a, b, c, d = 0x1000_0000, 0x2000_0000, 0x3000_0000, 0x4000_0000
    trace = [
        _entry("alloc", b, 60 * MB, 10, CPP),
        _entry("free_requested", a, 100 * MB, 50),
        _entry("free_completed", a, 100 * MB, 50),
        _entry("alloc", c, 30 * MB, 70, CPP),
        _entry("free_requested", b, 60 * MB, 100),
        _entry("free_completed", b, 60 * MB, 100),
    ]
    segment = {"device": 0, "address": c, "total_size": 200 * MB, "allocated_size": 50 * MB, "stream": 0,
               "segment_type": "large", "blocks": [_block(c, 30 * MB), _block(d, 20 * MB)]}
    return {"segments": [segment], "device_traces": [trace]}


def hand_peak() -> tuple[int, float]:
    """(peak bytes, its time in ms): live bytes after each change, in time order."""
    changes = [(10, 60 * MB), (50, -100 * MB), (70, 30 * MB), (100, -60 * MB)]
    live, best = 120 * MB, (120 * MB, -1.0)  # A and D resident from the start
    for at, delta in changes:
        live += delta
        best = max(best, (live, at))
    return best


def _summary(tmp_path: Path) -> dict[str, Any]:
    session = write_session(tmp_path / "prof", [x("aten::empty", 0, 10)])
    (session / "memory_snapshot_rank0.pickle").write_bytes(pickle.dumps(snapshot(), protocol=4))
    ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds"))
    wanted = (ANALYSES_BY_NAME["allocation_peaks"], ANALYSES_BY_NAME["top_allocation_stacks"])
    with open_dataset(tmp_path / "ds") as ds:
        tables = ds.load(needed_columns(wanted))
    return {a.name: a(tables).to_pylist() for a in wanted}


def test_blocks_freed_during_recording_but_allocated_before_count_toward_the_peak(tmp_path: Path) -> None:
    # GIVEN a snapshot where 120 MB were resident before recording, 100 MB of it freed at 50 ms
    peaks = _summary(tmp_path)["allocation_peaks"]
    # THEN the peak is 180 MB at 10 ms (A + D + B), not 110 MB at 70 ms (A left out)
    peak_bytes, at_ms = hand_peak()
    assert (peak_bytes, at_ms) == (180 * MB, 10)
    assert peaks[0]["peak_bytes"] == peak_bytes
    assert peaks[0]["peak_ts_ns"] == (T0_US + int(at_ms * 1000)) * 1000


def test_stacks_recorded_with_cpp_frames_are_named_past_the_unwinder_and_allocator(tmp_path: Path) -> None:
    stacks = _summary(tmp_path)["top_allocation_stacks"]
    frames = {row["frame"] for row in stacks}
    assert not any("unwind" in f or "CachingAllocator" in f for f in frames), frames
    assert any("at::native::empty_cuda" in f for f in frames), frames

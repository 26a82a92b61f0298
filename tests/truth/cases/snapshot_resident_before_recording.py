"""A CUDA memory snapshot whose recording began with 120 MB resident, 100 MB of it freed during the
recording, and stacks recorded with C++ frames (``_record_memory_history(stacks="all")``)."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

from tests.ingest.helpers import BASE_NS, write_session, x
from tests.truth.harness import Case

MB = 10**6
T0_US = BASE_NS // 1000 + 1_000  # recording starts 1 ms into the trace
PY = [{"filename": "model.py", "line": 7, "name": "forward"}, {"filename": "train.py", "line": 3, "name": "main"}]
CPP = [  # innermost first, as torch's CapturedTraceback symbolizes them
    {"filename": "??", "line": 0, "name": "torch::unwind::unwind()"},
    {"filename": "??", "line": 0, "name": "torch::CapturedTraceback::gather(bool, bool, bool)"},
    {"filename": "??", "line": 0, "name": "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc"},
    {"filename": "??", "line": 0, "name": "at::native::empty_cuda"},
    *PY,
]
A, B, C, D = 0x1000_0000, 0x2000_0000, 0x3000_0000, 0x4000_0000
# (action, address, bytes, ms after recording start); A (100 MB) and D (20 MB) were allocated before it
ENTRIES = [
    ("alloc", B, 60 * MB, 10), ("free_requested", A, 100 * MB, 50), ("free_completed", A, 100 * MB, 50),
    ("alloc", C, 30 * MB, 70), ("free_requested", B, 60 * MB, 100), ("free_completed", B, 60 * MB, 100),
]
RESIDENT_AT_EXPORT = {C: 30 * MB, D: 20 * MB}  # the snapshot's segments: active blocks at export


def snapshot() -> dict[str, Any]:
    trace = [{"action": a, "addr": addr, "size": size, "stream": 0, "time_us": T0_US + at * 1000,
              "frames": CPP if a == "alloc" else []} for a, addr, size, at in ENTRIES]
    blocks = [{"address": addr, "size": size, "requested_size": size, "state": "active_allocated", "frames": PY}
              for addr, size in RESIDENT_AT_EXPORT.items()]
    segment = {"device": 0, "address": C, "total_size": 200 * MB, "allocated_size": 50 * MB, "stream": 0,
               "segment_type": "large", "blocks": blocks}
    return {"segments": [segment], "device_traces": [trace]}


def build(folder: Path) -> Path:
    session = write_session(folder / "profile", [x("aten::empty", 0, 10)])
    (session / "memory_snapshot_rank0.pickle").write_bytes(pickle.dumps(snapshot(), protocol=4))
    return folder / "profile"


def hand_count() -> tuple[int, int]:
    """(peak live bytes, its time in ns): what was resident at the start (freed later without an allocation,
    or still active at export without one), then every recorded change in time order."""
    allocated = {addr for a, addr, _, _ in ENTRIES if a == "alloc"}
    freed_unseen = {addr: size for a, addr, size, _ in ENTRIES if a == "free_completed" and addr not in allocated}
    live = sum(freed_unseen.values()) + sum(s for addr, s in RESIDENT_AT_EXPORT.items() if addr not in allocated)
    best = (live, -1)
    for action, _addr, size, at in ENTRIES:
        if action == "alloc":
            live += size
        elif action == "free_completed":
            live -= size
        best = max(best, (live, -((T0_US + at * 1000) * 1000)))  # the earliest time of the peak
    return best[0], -best[1]


_PEAK_BYTES, _PEAK_NS = hand_count()
_CPP_BYTES = sum(size for action, _, size, _ in ENTRIES if action == "alloc")  # every alloc recorded its C++ stack

CASE = Case(
    name="snapshot_resident_before_recording",
    situation="a CUDA snapshot recorded after 120 MB were allocated, 100 MB of them freed during the recording, "
    "stacks with C++ frames",
    source="torch's snapshot format (torch/cuda/memory.py _snapshot, _record_memory_history(stacks='all'); "
    "torch/cuda/_memory_viz.py _frame_filter)",
    truth="hand count",
    build=build,
    numbers={
        "summary:allocation_peaks[rank=0].peak_bytes": _PEAK_BYTES,
        "summary:allocation_peaks[rank=0].peak_ts_ns": _PEAK_NS,
        # the stacks with C++ frames are named by their first frame past the unwinder and allocator
        "summary:top_allocation_stacks[frame=at::native::empty_cuda (??:0)].size_bytes": _CPP_BYTES,
        "summary:top_allocation_stacks{frame=torch::unwind::unwind() (??:0)}.#": 0,
    },
)

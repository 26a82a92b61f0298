"""Allocator segments and trace entries from memory snapshots: the `segments` and `allocator_trace` tables."""

from __future__ import annotations

import pickle
import shutil
from collections import Counter
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from ...conftest import SHARED
from ..helpers import BASE_NS, write_session, x

MIB = 2**20
REAL = SHARED / "datasets" / "public-traces" / "memory-snapshots" / "memory.pickle"
FRAMES = [{"filename": "model.py", "line": 7, "name": "forward"}, {"filename": "train.py", "line": 3, "name": "main"}]


def tiny_snapshot(t_us: int) -> dict[str, Any]:
    """Two segments as torch.cuda.memory._snapshot() writes them: a large one cut into an allocated,
    a pending-free and a cached free block, and a small one from an older format without block addresses."""
    big = {"device": 0, "address": 0x7F00_0000_0000, "total_size": 20 * MIB, "allocated_size": 8 * MIB,
           "active_size": 10 * MIB, "requested_size": 8 * MIB - 100, "stream": 0, "segment_type": "large",
           "segment_pool_id": (0, 0), "is_expandable": False, "frames": FRAMES,
           "blocks": [
               {"address": 0x7F00_0000_0000, "size": 8 * MIB, "requested_size": 8 * MIB - 100,
                "state": "active_allocated", "frames": FRAMES},
               {"address": 0x7F00_0080_0000, "size": 2 * MIB, "requested_size": 2 * MIB,
                "state": "active_pending_free", "frames": FRAMES},
               {"address": 0x7F00_00A0_0000, "size": 10 * MIB, "requested_size": 10 * MIB, "state": "inactive",
                "frames": []},
           ]}
    small = {"device": 0, "address": 0x7F00_1000_0000, "total_size": 2 * MIB, "stream": 7, "segment_type": "small",
             "segment_pool_id": (1, 2), "blocks": [
                 {"size": 512, "requested_size": 4, "state": "active_allocated", "frames": FRAMES},
                 {"size": 2 * MIB - 512, "requested_size": 2 * MIB - 512, "state": "inactive"}]}
    trace = [
        {"action": "segment_alloc", "addr": big["address"], "size": 20 * MIB, "stream": 0, "time_us": t_us,
         "frames": FRAMES},
        {"action": "alloc", "addr": big["address"], "size": 8 * MIB - 100, "stream": 0, "time_us": t_us + 1,
         "frames": FRAMES},
        {"action": "free_requested", "addr": 0x7F00_0080_0000, "size": 2 * MIB, "stream": 0, "time_us": t_us + 2,
         "frames": []},
    ]
    return {"segments": [big, small], "device_traces": [trace]}


def _ingest(tmp_path: Path, snapshot: dict[str, Any] | bytes) -> Path:
    session = write_session(tmp_path / "prof", [x("aten::empty", 0, 10)])
    data = snapshot if isinstance(snapshot, bytes) else pickle.dumps(snapshot, protocol=4)
    (session / "memory_snapshot_rank0.pickle").write_bytes(data)
    ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds"))
    return tmp_path / "ds"


def test_every_block_of_every_segment_is_a_row(tmp_path: Path) -> None:
    # GIVEN a session with a snapshot of two segments WHEN it is ingested
    with open_dataset(_ingest(tmp_path, tiny_snapshot((BASE_NS + 5_000) // 1000))) as ds:
        rows = ds.sql("SELECT * FROM segments ORDER BY block_addr").to_pylist()
        trace = ds.sql("SELECT * FROM allocator_trace ORDER BY seq").to_pylist()
        stack = ds.sql("SELECT name FROM frames WHERE stack_id = $s", {"s": trace[0]["stack_id"]}).to_pylist()
    # THEN each block is a row carrying its segment, sizes in bytes, state and allocating stack
    got = [(r["segment_addr"], r["segment_size_bytes"], r["block_addr"], r["block_size_bytes"],
            r["requested_size_bytes"], r["state"]) for r in rows]
    assert got == [
        (0x7F00_0000_0000, 20 * MIB, 0x7F00_0000_0000, 8 * MIB, 8 * MIB - 100, "active_allocated"),
        (0x7F00_0000_0000, 20 * MIB, 0x7F00_0080_0000, 2 * MIB, 2 * MIB, "active_pending_free"),
        (0x7F00_0000_0000, 20 * MIB, 0x7F00_00A0_0000, 10 * MIB, 10 * MIB, "inactive"),
        # no block addresses: placed one after the other from the segment's start, as memory_viz does
        (0x7F00_1000_0000, 2 * MIB, 0x7F00_1000_0000, 512, 4, "active_allocated"),
        (0x7F00_1000_0000, 2 * MIB, 0x7F00_1000_0200, 2 * MIB - 512, 2 * MIB - 512, "inactive"),
    ]
    assert {(r["stream"], r["pool"], r["segment_type"], r["device"], r["rank"]) for r in rows} == {
        (0, "0,0", "large", 0, 0), (7, "1,2", "small", 0, 0)}
    assert rows[0]["frames"] == "forward model.py:7\nmain train.py:3" and rows[2]["frames"] == ""
    assert {r["snapshot"] for r in rows} == {"memory_snapshot_rank0.pickle"}
    # AND the trace entries keep their order, times in ns and stacks in the frames tree
    assert [(t["seq"], t["action"], t["ts_ns"] - BASE_NS, t["size_bytes"]) for t in trace] == [
        (0, "segment_alloc", 5_000, 20 * MIB),
        (1, "alloc", 6_000, 8 * MIB - 100),
        (2, "free_requested", 7_000, 2 * MIB),
    ]
    assert stack == [{"name": "forward"}] and trace[2]["stack_id"] == -1


def test_a_segment_that_cannot_be_placed_keeps_the_allocations_and_says_so(tmp_path: Path) -> None:
    # GIVEN a snapshot whose one segment has neither an address nor blocks with one
    snapshot = tiny_snapshot((BASE_NS + 5_000) // 1000)
    snapshot["segments"] = [{"device": 0, "total_size": 2 * MIB, "blocks": [{"size": 2 * MIB, "state": "inactive"}]}]
    with open_dataset(_ingest(tmp_path, snapshot)) as ds:
        warnings = ds.table("warnings").to_pylist()
        segments = ds.table("segments").num_rows
        traced = ds.table("allocator_trace").num_rows
        allocations = ds.table("allocations").num_rows
    # THEN the segments are missing, a warning says which and why, and the rest is kept: the traced
    # allocation and the 2 MiB block from before recording whose free the trace requested
    assert segments == 0 and traced == 3 and allocations == 2
    (warning,) = [w for w in warnings if w["kind"] == "bad_snapshot"]
    assert warning["file"] == "memory_snapshot_rank0.pickle" and "segments[0] has no 'address'" in warning["message"]


@pytest.mark.skipif(not REAL.exists(), reason="needs ../shared/datasets/public-traces")
def test_a_real_cuda_snapshot_keeps_every_segment_block_and_entry(tmp_path: Path) -> None:
    # GIVEN the public CUDA snapshot (61 segments, 468 blocks, 23,105 trace entries), copied into a session
    shutil.copy(REAL, tmp_path / "memory.pickle")
    snapshot = pickle.loads((tmp_path / "memory.pickle").read_bytes())  # plain dicts and lists: no code runs
    with open_dataset(_ingest(tmp_path, (tmp_path / "memory.pickle").read_bytes())) as ds:
        rows = ds.table("segments").to_pylist()
        counted = ds.sql("SELECT action, count(*) AS n FROM allocator_trace GROUP BY action").to_pylist()
    actions = {r["action"]: r["n"] for r in counted}
    # THEN every block is a row, in the states the snapshot counts
    assert len(rows) == sum(len(s["blocks"]) for s in snapshot["segments"]) == 468
    assert Counter(r["state"] for r in rows) == {"active_allocated": 397, "inactive": 71}
    segments = {r["segment_addr"]: r["segment_size_bytes"] for r in rows}
    assert len(segments) == 61 and sum(segments.values()) == sum(s["total_size"] for s in snapshot["segments"])
    # AND each segment's blocks tile it exactly, and its allocated bytes are the snapshot's allocated_size
    for seg in snapshot["segments"]:
        mine = sorted((r["block_addr"], r["block_size_bytes"], r["state"]) for r in rows
                      if r["segment_addr"] == seg["address"])
        assert sum(size for _, size, _ in mine) == seg["total_size"]
        assert all(a + n == b for (a, n, _), (b, _, _) in pairwise(mine))
        assert sum(n for _, n, state in mine if state == "active_allocated") == seg["allocated_size"]
    # AND every trace entry is a row
    assert actions == {"segment_alloc": 61, "alloc": 7946, "free_requested": 7549, "free_completed": 7549}

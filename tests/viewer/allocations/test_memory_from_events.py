"""Allocations rebuilt from a trace's ``[memory]`` events when it has no snapshot, and the list of the
largest allocations with its size and stack filters."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import kinetoscope
from kinetoscope.importer import trace_cache
from kinetoscope.viewer.allocations import memory
from kinetoscope.viewer.indexing.index import ViewerIndex

from ...conftest import SHARED

BASE_US = 1_700_000_000_000_000
MIB = 2**20


def _memory(ts_us: int, addr: int, size: int, device: int = 0) -> dict[str, object]:
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1,
            "ts": BASE_US + ts_us, "args": {"Addr": addr, "Bytes": size, "Device Type": 1, "Device Id": device}}


def _trace(tmp_path: Path) -> Path:
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": BASE_US, "dur": 100, "args": {}},
        _memory(1, 0xA000, 4 * MIB),  # freed at 50
        _memory(2, 0xB000, 1 * MIB),  # never freed
        _memory(3, 0xC000, -2 * MIB),  # allocated before the trace, freed at 3
        _memory(10, 0xD000, 512),  # a small one, freed at 20
        _memory(20, 0xD000, -512),
        _memory(50, 0xA000, -4 * MIB),
        _memory(60, 0xA000, 8 * MIB),  # the same address again: a new block, live at the end
    ]
    path = tmp_path / "worker0.pt.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    return path


@pytest.fixture
def index(tmp_path: Path) -> ViewerIndex:
    dataset = kinetoscope.open(trace_cache.profile_for([_trace(tmp_path)]))
    return ViewerIndex.open(dataset)


def test_blocks_are_paired_by_address_and_size(index: ViewerIndex) -> None:
    (source,) = [s for s in memory.allocation_sources(index) if s["device"] == 0]
    assert (source["origin"], source["count"], source["largest_bytes"]) == ("events", 5, 8 * MIB)
    found = memory.allocations(index, source["run"], source["rank"], 0)
    assert found["origin"] == "events" and found["total_count"] == 5
    blocks = sorted((a["size"], a["alloc"], a["free"]) for a in found["allocations"])
    start = min(a["alloc"] for a in found["allocations"] if a["size"] == 4 * MIB)
    assert [b[0] for b in blocks] == [512, MIB, 2 * MIB, 4 * MIB, 8 * MIB]
    by_size = {b[0]: b for b in blocks}
    assert by_size[4 * MIB][2] - by_size[4 * MIB][1] == 49_000  # allocated at 1 µs, freed at 50 µs
    assert by_size[MIB][2] is None and by_size[8 * MIB][2] is None  # still live at the end
    assert by_size[2 * MIB][1] == 0 and by_size[2 * MIB][2] == start + 2_000  # live from the run start, freed at 3 µs
    assert by_size[512][2] - by_size[512][1] == 10_000


def test_largest_list_filters_by_size_and_says_how_many_match(index: ViewerIndex) -> None:
    run, rank = memory.allocation_sources(index)[0]["run"], 0
    listed = memory.largest(index, run, rank, 0, min_bytes=MIB)
    assert listed["matching"] == 4 and [a["size"] for a in listed["allocations"]] == [8 * MIB, 4 * MIB, 2 * MIB, MIB]
    assert memory.largest(index, run, rank, 0, min_bytes=MIB, limit=2)["matching"] == 4
    assert memory.largest(index, run, rank, 0, stack_text="linear")["matching"] == 0  # no stacks in events


def test_largest_list_matches_stack_text(multirank: ViewerIndex) -> None:
    source = memory.allocation_sources(multirank)[0]
    assert source["origin"] == "snapshot"
    args = (multirank, source["run"], source["rank"], source["device"])
    every = memory.largest(*args, limit=1000)
    linear = memory.largest(*args, stack_text="LINEAR.py", limit=1000)
    assert 0 < linear["matching"] <= every["matching"] == source["count"]
    assert all("linear.py" in a["stack"].lower() for a in linear["allocations"])
    assert [a["size"] for a in every["allocations"]] == sorted((a["size"] for a in every["allocations"]), reverse=True)


REAL = SHARED / "datasets" / "public-traces" / "hta" / "tests" / "data" / "df_index_resolver"
REAL = REAL / "df_index_resolver.json.gz"


def test_rebuilt_blocks_follow_the_allocators_own_total_on_a_real_trace(tmp_path: Path) -> None:
    """On a real trace (HTA's df_index_resolver, 26,770 device [memory] events), the live bytes of the
    rebuilt blocks plus one constant (the blocks allocated before the trace and never freed in it)
    equal the allocator's own `Total Allocated` after every instant."""
    if not REAL.exists():
        pytest.skip("public trace corpus not present")
    shutil.copy(REAL, tmp_path / REAL.name)
    index = ViewerIndex.open(kinetoscope.open(trace_cache.profile_for([tmp_path / REAL.name])))
    con = index.cursor()
    device_blocks = memory.EVENT_BLOCKS.format(where="AND device = 1")
    blocks = con.execute(f"SELECT size_bytes, alloc_ts_ns, free_ts_ns FROM ({device_blocks})").fetchnumpy()
    totals = con.execute("""
        SELECT ts_ns, arg_max(try_cast(json_extract(args, '$."Total Allocated"') AS BIGINT), id) AS total
        FROM events WHERE kind = 'allocation' AND device = 1 GROUP BY ts_ns ORDER BY ts_ns""").fetchnumpy()
    size, alloc, free = (np.asarray(blocks[k]) for k in ("size_bytes", "alloc_ts_ns", "free_ts_ns"))
    at = np.asarray(totals["ts_ns"])
    order_a, order_f = np.argsort(alloc), np.argsort(np.where(free < 0, np.iinfo(np.int64).max, free))
    allocated = np.r_[0, np.cumsum(size[order_a])][np.searchsorted(alloc[order_a], at, side="right")]
    freed_ts = np.where(free < 0, np.iinfo(np.int64).max, free)[order_f]
    freed = np.r_[0, np.cumsum(size[order_f])][np.searchsorted(freed_ts, at, side="right")]
    gap = np.asarray(totals["total"]) - (allocated - freed)
    assert len(size) == 13_385 and len(at) > 20_000
    assert np.unique(gap).tolist() == [4_096_614_400]  # one constant: nothing paired wrongly


def test_memory_resident_before_the_trace_is_a_baseline(tmp_path: Path) -> None:
    # GIVEN allocator events whose totals say 100 MiB were held before the trace that no event frees
    def event(ts_us: int, addr: int, size: int, total: int) -> dict[str, object]:
        found = _memory(ts_us, addr, size)
        found["args"] = {**found["args"], "Total Allocated": total}  # type: ignore[dict-item]
        return found

    held = 100 * MIB
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1, "tid": 1, "ts": BASE_US, "dur": 100, "args": {}},
        event(1, 0xA000, 4 * MIB, held + 2 * MIB + 4 * MIB),  # 2 MiB block freed at 3, allocated before the trace
        event(3, 0xC000, -2 * MIB, held + 4 * MIB),
        event(50, 0xA000, -4 * MIB, held),
    ]
    path = tmp_path / "worker0.pt.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps({"traceEvents": events}).encode()))
    index = ViewerIndex.open(kinetoscope.open(trace_cache.profile_for([path])))
    (source,) = [s for s in memory.allocation_sources(index) if s["device"] == 0]
    found = memory.allocations(index, source["run"], source["rank"], 0)
    # THEN the 100 MiB the blocks do not show is the baseline under them
    assert found["baseline_bytes"] == held

"""The allocator segment view's state: the snapshot's segments, and earlier states rebuilt by undoing
the trace entries after a time (as memory_viz's Allocator State History does)."""

from __future__ import annotations

import pickle
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

import kinetoscope
from kinetoscope.viewer.allocations import allocator_replay as ar
from kinetoscope.viewer.allocations import allocator_state
from kinetoscope.viewer.indexing.index import ViewerIndex

from ...conftest import PYTHON, SHARED, python_env, requires_cxx
from ...kineto_gen import BASE_NS, TrainingSpec, write_profile

MIB = 2**20
REAL = SHARED / "datasets" / "public-traces" / "memory-snapshots" / "memory.pickle"
SEG = 0x7F00_0000_0000
T_US = BASE_NS // 1000 + 100  # 100 µs into the generated run
FRAMES = [{"filename": "model.py", "line": 7, "name": "forward"}]


def _entry(action: str, addr: int, size: int, dt_us: int, frames: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": T_US + dt_us, "frames": frames or []}


def tiny_snapshot() -> dict[str, Any]:
    """One 20 MiB segment made at +0 µs; A (8 MiB) allocated at +1, B (2 MiB) at +2, C (4 MiB) at +3 and freed at
    +4, B's free requested at +5: at the snapshot A is allocated, B pending free, the rest cached free."""
    blocks = [
        {"address": SEG, "size": 8 * MIB, "requested_size": 8 * MIB - 100, "state": "active_allocated",
         "frames": FRAMES},
        {"address": SEG + 8 * MIB, "size": 2 * MIB, "requested_size": 2 * MIB, "state": "active_pending_free",
         "frames": FRAMES},
        {"address": SEG + 10 * MIB, "size": 10 * MIB, "requested_size": 10 * MIB, "state": "inactive", "frames": []},
    ]
    segment = {"device": 0, "address": SEG, "total_size": 20 * MIB, "allocated_size": 8 * MIB,
               "active_size": 10 * MIB, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
               "is_expandable": False, "frames": [], "blocks": blocks}
    trace = [
        _entry("segment_alloc", SEG, 20 * MIB, 0),
        _entry("alloc", SEG, 8 * MIB - 100, 1, FRAMES),
        _entry("alloc", SEG + 8 * MIB, 2 * MIB, 2, FRAMES),
        _entry("alloc", SEG + 10 * MIB, 4 * MIB, 3, [{"filename": "loss.py", "line": 9, "name": "scratch"}]),
        _entry("free_requested", SEG + 10 * MIB, 4 * MIB, 4),
        _entry("free_completed", SEG + 10 * MIB, 4 * MIB, 4),
        _entry("free_requested", SEG + 8 * MIB, 2 * MIB, 5),
    ]
    return {"segments": [segment], "device_traces": [trace]}


def _index(tmp_path: Path, snapshot: dict[str, Any] | bytes) -> ViewerIndex:
    (session,) = write_profile(tmp_path / "prof", TrainingSpec(ranks=1, layers=2, problems=False))
    data = snapshot if isinstance(snapshot, bytes) else pickle.dumps(snapshot, protocol=4)
    (session / "memory_snapshot_rank0.pickle").write_bytes(data)
    return ViewerIndex.open(kinetoscope.open(tmp_path / "prof"))


def _at(index: ViewerIndex, dt_us: float | None) -> dict[str, Any]:
    at = None if dt_us is None else int(T_US * 1000 + dt_us * 1000) - index.t0_ns
    return allocator_state.allocator_state(index, "prof", 0, 0, at_ns=at)


def _layout(state: dict[str, Any]) -> list[list[tuple[int, int, str]]]:
    return [[(b["offset"] // MIB, b["size"] // MIB, b["state"]) for b in s["blocks"]] for s in state["segments"]]


@pytest.fixture
def tiny(tmp_path: Path) -> ViewerIndex:
    return _index(tmp_path, tiny_snapshot())


def test_the_snapshot_state_is_the_snapshots_segments(tiny: ViewerIndex) -> None:
    state = _at(tiny, None)
    assert _layout(state) == [[(0, 8, "active_allocated"), (8, 2, "active_pending_free"), (10, 10, "inactive")]]
    assert state["totals"] == {"reserved_bytes": 20 * MIB, "segments": 1, "allocated_bytes": 8 * MIB,
                               "requested_bytes": 10 * MIB - 100, "pending_free_bytes": 2 * MIB,
                               "free_bytes": 10 * MIB, "free_blocks": 1, "largest_free_bytes": 10 * MIB}
    assert state["history"]["complete"] and state["undone"] == state["mismatches"] == state["unplaced"] == 0
    (block, *_) = state["segments"][0]["blocks"]
    assert state["stacks"][block["stack"]] == "forward model.py:7"


def test_earlier_states_undo_the_entries_after_them(tiny: ViewerIndex) -> None:
    # after C's free was requested and completed, before B's: B is allocated again
    assert _layout(_at(tiny, 4.5)) == [[(0, 8, "active_allocated"), (8, 2, "active_allocated"), (10, 10, "inactive")]]
    # while C was live: it comes back with its requested size (the trace has no rounded size) and its allocating stack
    state = _at(tiny, 3.5)
    assert _layout(state) == [[(0, 8, "active_allocated"), (8, 2, "active_allocated"), (10, 4, "active_allocated"),
                               (14, 6, "inactive")]]
    c = state["segments"][0]["blocks"][2]
    assert not c["size_exact"] and state["stacks"][c["stack"]] == "scratch loss.py:9"
    assert state["totals"]["largest_free_bytes"] == 6 * MIB and state["undone"] == 3
    # before A (and at the segment's own entry, which has happened by then): the segment is all free
    assert _layout(_at(tiny, 0.5)) == _layout(_at(tiny, 0)) == [[(0, 20, "inactive")]]


def test_each_state_names_its_last_entry_and_the_entry_times_around_it(tiny: ViewerIndex) -> None:
    def us(ns: int | None) -> float | None:
        return None if ns is None else (ns + tiny.t0_ns - T_US * 1000) / 1000

    final = _at(tiny, None)
    assert (final["last_entry"]["seq"], final["last_entry"]["action"]) == (6, "free_requested")
    assert (us(final["prev_ns"]), final["next_ns"]) == (4, None)
    middle = _at(tiny, 4.5)  # C's free was requested and completed in the same µs: one step
    assert (middle["last_entry"]["action"], us(middle["prev_ns"]), us(middle["next_ns"])) == ("free_completed", 3, 5)
    before = _at(tiny, -1)
    assert (before["last_entry"], before["prev_ns"], us(before["next_ns"])) == (None, None, 0)


def test_a_time_before_the_trace_says_history_is_incomplete(tiny: ViewerIndex) -> None:
    state = _at(tiny, -50)
    assert not state["history"]["complete"] and state["history"]["note"].startswith("History is incomplete")
    assert state["segments"] == [] and state["mismatches"] == 0
    assert state["history"]["first_ns"] == T_US * 1000 - tiny.t0_ns


def test_a_rank_without_segments_says_so(tiny: ViewerIndex) -> None:
    state = allocator_state.allocator_state(tiny, "prof", 0, 5)
    assert not state["found"] and "no allocator segments" in state["note"]


def test_expandable_segments_map_and_unmap_their_pages() -> None:
    # GIVEN an expandable segment of 6 MiB at the snapshot, grown from 2 MiB by two maps and shrunk by one unmap
    final = ar.State([ar.Segment(0, 6 * MIB, 0, expandable=True)], {})
    newest_first = [ar.Entry("segment_map", 6 * MIB, 2 * MIB), ar.Entry("segment_unmap", 4 * MIB, 2 * MIB),
                    ar.Entry("segment_map", 4 * MIB, 2 * MIB), ar.Entry("segment_map", 2 * MIB, 2 * MIB)]
    # WHEN the entries are undone one by one THEN the segment grows back and shrinks as it was mapped
    sizes = [[(s.addr // MIB, s.size // MIB) for s in ar.replay(final, newest_first[:n]).segments] for n in range(5)]
    assert sizes == [[(0, 6)], [(0, 6)], [(0, 6)], [(0, 4)], [(0, 2)]]
    # AND an unmap in the middle splits it when undone the other way (mapping is undone by unmapping)
    split = ar.replay(final, [ar.Entry("segment_map", 2 * MIB, 2 * MIB)])
    assert [(s.addr // MIB, s.size // MIB) for s in split.segments] == [(0, 2), (4, 2)] and split.mismatches == 0


def test_an_entry_with_nothing_to_undo_is_a_mismatch() -> None:
    rebuilt = ar.replay(ar.State([], {}), [ar.Entry("alloc", 64, 512), ar.Entry("segment_alloc", 0, 2 * MIB)])
    assert (rebuilt.mismatches, rebuilt.undone) == (2, 2)


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> tuple[ViewerIndex, dict[str, Any]]:
    if not REAL.exists():
        pytest.skip("needs ../shared/datasets/public-traces")
    root = tmp_path_factory.mktemp("real")
    shutil.copy(REAL, root / "memory.pickle")
    data = (root / "memory.pickle").read_bytes()
    return _index(root, data), pickle.loads(data)  # plain dicts and lists: no code runs


def _forward(snapshot: dict[str, Any], until_us: int) -> tuple[int, int]:
    """Reserved and active requested bytes after every entry up to ``until_us``, summed forward from empty
    (the public snapshot's trace begins with an empty allocator: its 61 segment_alloc make its 61 segments)."""
    reserved = active = 0
    for e in snapshot["device_traces"][0]:
        if e["time_us"] > until_us:
            break
        sign = {"alloc": 1, "free_completed": -1, "segment_alloc": 1, "segment_free": -1}.get(e["action"], 0)
        if e["action"].startswith("segment"):
            reserved += sign * e["size"]
        else:
            active += sign * e["size"]
    return reserved, active


def test_a_real_snapshot_state_matches_its_own_figures(real: tuple[ViewerIndex, dict[str, Any]]) -> None:
    index, snapshot = real
    state = allocator_state.allocator_state(index, "prof", 0, 0)
    segments = snapshot["segments"]
    totals = state["totals"]
    assert totals["segments"] == 61 and totals["reserved_bytes"] == sum(s["total_size"] for s in segments)
    assert totals["allocated_bytes"] == sum(s["allocated_size"] for s in segments)
    assert totals["requested_bytes"] == sum(s["requested_size"] for s in segments)
    inactive = [b["size"] for s in segments for b in s["blocks"] if b["state"] == "inactive"]
    assert (totals["free_bytes"], totals["free_blocks"], totals["largest_free_bytes"]) == (
        sum(inactive), len(inactive), max(inactive))  # the gaps left by the blocks are the allocator's free blocks
    assert state["mismatches"] == state["unplaced"] == 0
    # AND a segment says which stack reserved it: the first segment_alloc's (the model moved to the device)
    first = snapshot["device_traces"][0][0]
    (made,) = [s for s in state["segments"] if int(s["addr"]) == first["addr"]]
    assert state["stacks"][made["stack"]].startswith(f"convert {first['frames'][0]['filename']}:1357")
    # AND the history series ends at the snapshot's totals; with no segment ever freed, reserved only grows
    series = state["series"]
    assert (series["reserved"][-1], series["active"][-1]) == (totals["reserved_bytes"], totals["requested_bytes"])
    assert series["reserved"] == sorted(series["reserved"]) and series["reserved"][0] > 0
    assert max(series["active"]) <= max(series["reserved"])


def test_a_real_snapshot_replayed_agrees_with_its_trace_summed_forward(
    real: tuple[ViewerIndex, dict[str, Any]],
) -> None:
    index, snapshot = real
    trace = snapshot["device_traces"][0]
    for k in (0.1, 0.25, 0.5, 0.9):
        until = trace[int(len(trace) * k)]["time_us"]
        state = allocator_state.allocator_state(index, "prof", 0, 0, at_ns=until * 1000 - index.t0_ns)
        totals = state["totals"]
        assert (totals["reserved_bytes"], totals["requested_bytes"]) == _forward(snapshot, until)
        assert state["mismatches"] == state["unplaced"] == 0 and state["history"]["complete"]
    before = allocator_state.allocator_state(index, "prof", 0, 0, at_ns=trace[0]["time_us"] * 1000 - index.t0_ns - 1)
    assert before["segments"] == [] and before["mismatches"] == 0 and not before["history"]["complete"]


def test_a_real_snapshot_agrees_with_torchs_segment_summary(real: tuple[ViewerIndex, dict[str, Any]]) -> None:
    # torch's `python -m torch.cuda._memory_viz segments` summary (segsum) counts allocated as requested bytes
    # and free as reserved less those; ours counts allocated as block sizes (the snapshot's allocated_size) and
    # cached free as the inactive blocks: the difference between the two is the rounding
    memory_viz = pytest.importorskip("torch.cuda._memory_viz")
    index, snapshot = real
    text = memory_viz.segsum(snapshot)
    figures = dict(line.split(": ", 1) for line in text.splitlines() if line.startswith(("segments", "total_")))
    totals = allocator_state.allocator_state(index, "prof", 0, 0)["totals"]

    def mib(n: int) -> str:  # torch's formatting
        return f"{n / MIB:.1f}MiB"

    assert figures["segments"] == str(totals["segments"])
    assert figures["total_allocated"] == mib(totals["requested_bytes"])
    rounding = totals["allocated_bytes"] - totals["requested_bytes"]
    assert figures["total_free"].startswith(mib(totals["free_bytes"] + rounding))
    assert figures["total_reserved"] == f"{totals['reserved_bytes'] / 2**30:.1f}GiB"


@requires_cxx
def test_a_real_cpu_capture_has_a_segment_per_live_block_at_any_time(tmp_path: Path) -> None:
    # GIVEN a real CPU training step profiled with kinetoscope's memory history and its snapshot
    from ..test_browser import MEMORY_CAPTURE

    (tmp_path / "train.py").write_text(MEMORY_CAPTURE)
    subprocess.run([PYTHON, str(tmp_path / "train.py"), str(tmp_path / "prof")], env=python_env(), check=True,
                   capture_output=True, timeout=240)
    index = ViewerIndex.open(kinetoscope.open(tmp_path / "prof"))
    (source,) = allocator_state.segment_sources(index)
    assert source["device"] == -1  # host memory
    blocks = index.cursor().execute("SELECT alloc_ts_ns, free_ts_ns FROM allocations").fetchall()
    state = allocator_state.allocator_state(index, source["run"], 0, -1)
    start, end = state["history"]["first_ns"], state["history"]["last_ns"]
    assert state["totals"]["segments"] == sum(1 for _, free in blocks if free < 0)  # live at export (none here)
    assert len(blocks) > 10
    # WHEN the state is rebuilt at times across the trace THEN each live block is its own segment, the
    # same blocks the allocations table says were live then (allocated by then, not yet freed)
    seen = set()
    for k in (0.0, 0.3, 0.6, 0.9):
        at = int(start + (end - start) * k)
        rebuilt = allocator_state.allocator_state(index, source["run"], 0, -1, at_ns=at)
        at_abs = at + index.t0_ns
        live = sum(1 for alloc, free in blocks if alloc <= at_abs and (free < 0 or free > at_abs))
        assert rebuilt["totals"]["segments"] == live and rebuilt["mismatches"] == rebuilt["unplaced"] == 0
        assert rebuilt["totals"]["free_bytes"] == 0 and rebuilt["history"]["complete"]
        seen.add(live)
    assert len(seen) > 1  # the times chosen see different states

"""CPU memory history: real allocations recorded, exported into sessions, read by torch's memory_viz."""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.cuda import _memory_viz
from torch.profiler import profile

import kinetoscope
from kinetoscope import ConfigError, ProfileConfig, ProfileMode, Profiler, SessionError
from kinetoscope.capture.memory import history, snapshots
from kinetoscope.format.session_files import trace_info as ti
from kinetoscope.format.session_files.snapshot import load_snapshot, summarize

from ...conftest import requires_cxx
from ..helpers import check_complete_session, load_trace

pytestmark = requires_cxx


@pytest.fixture(autouse=True)
def _no_history_left_behind(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(snapshots, "_latest_session", None)
    yield
    kinetoscope.memory.record_memory_history(enabled=False)


def allocate_and_free() -> tuple[torch.Tensor, int]:
    kept = torch.empty(12345, dtype=torch.uint8)
    dropped = torch.empty(54321, dtype=torch.uint8)
    address = dropped.untyped_storage().data_ptr()
    del dropped
    return kept, address


def cpu_entries(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    (trace,) = snapshot["device_traces"]
    return trace


def profiled_session(out: Path, **kwargs: Any) -> Profiler:
    config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=out)
    exporter = Profiler(config)
    with profile(activities=kinetoscope.activities(), experimental_config=config,
                 on_trace_ready=exporter.export_trace, **kwargs):
        x = torch.randn(64, 64)
        for _ in range(3):
            x = torch.relu(x @ x)
    return exporter


def test_every_allocation_and_free_with_size_time_and_python_stack() -> None:
    before_ns = time.time_ns()
    kinetoscope.memory.record_memory_history(max_entries=1000)
    kept_tensor, freed_addr = allocate_and_free()
    kept_addr = kept_tensor.untyped_storage().data_ptr()
    snapshot, counts, recording = history.take_snapshot()
    after_ns = time.time_ns()

    assert recording.device_kind == "cpu" and recording.source == "cpu-allocator-hook"
    by_addr: dict[tuple[int, str], dict[str, Any]] = {(e["addr"], e["action"]): e for e in cpu_entries(snapshot)}
    kept = by_addr[(kept_addr, "alloc")]
    assert kept["size"] == 12345 and kept["stream"] == 0
    assert before_ns // 1000 <= kept["time_us"] <= after_ns // 1000
    assert kept["frames"][0]["name"] == "allocate_and_free"
    assert kept["frames"][1]["name"] == "test_every_allocation_and_free_with_size_time_and_python_stack"
    assert kept["frames"][0]["filename"] == __file__
    assert (freed_addr, "free_requested") in by_addr and (freed_addr, "free_completed") in by_addr
    assert by_addr[(freed_addr, "free_completed")]["size"] == 54321
    # the live block is a segment; the freed one is not
    live = {seg["address"]: seg for seg in snapshot["segments"]}
    assert live[kept_addr]["blocks"][0]["state"] == "active_allocated" and freed_addr not in live
    assert counts.entries == counts.entries_total >= 3


def test_max_entries_keeps_the_newest_and_counts_the_rest() -> None:
    kinetoscope.memory.record_memory_history(max_entries=10, stacks=None)
    for _ in range(30):
        torch.empty(100)
    with pytest.warns(UserWarning, match="kept the last 10 of"):
        snapshot, counts, _ = history.take_snapshot()
    assert counts.entries == 10 and counts.entries_total >= 60
    assert all(e["frames"] == [] for e in cpu_entries(snapshot))
    times = [e["time_us"] for e in cpu_entries(snapshot)]
    assert times == sorted(times)


def test_stopping_drops_the_history() -> None:
    kinetoscope.memory.record_memory_history()
    torch.empty(10)
    kinetoscope.memory.record_memory_history(enabled=False)
    assert not kinetoscope.memory.is_recording()
    with pytest.raises(SessionError, match="no memory history is being recorded"):
        history.take_snapshot()


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"max_entries": 0}, "max_entries"),
    ({"stacks": "cpp"}, "stacks"),
    ({"device": "mps"}, "device"),
])
def test_bad_arguments_name_the_parameter(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        kinetoscope.memory.record_memory_history(**kwargs)


def test_allocations_join_the_trace_allocator_events_by_address_size_and_time(tmp_path: Path) -> None:
    kinetoscope.memory.record_memory_history()
    exporter = profiled_session(tmp_path, profile_memory=True)
    snapshot_path = exporter.export_snapshot()
    session = exporter.sessions[0]
    trace = load_trace(session)
    base_ns = trace["baseTimeNanoseconds"]
    allocator = [e for e in trace["traceEvents"] if e.get("name") == "[memory]" and e["args"]["Bytes"] > 0]
    assert allocator
    # An address is reused by later allocations of the same size: join to the nearest in time.
    ours: dict[tuple[int, int], list[int]] = {}
    for entry in cpu_entries(load_snapshot(snapshot_path)):
        if entry["action"] == "alloc":
            ours.setdefault((entry["addr"], entry["size"]), []).append(entry["time_us"] * 1000)
    for event in allocator:
        key = (event["args"]["Addr"], event["args"]["Bytes"])
        assert key in ours, key
        event_ns = int(event["ts"] * 1000) + base_ns
        assert min(abs(t - event_ns) for t in ours[key]) < 5_000_000


def test_export_snapshot_into_the_session_and_reseal(tmp_path: Path) -> None:
    kinetoscope.memory.record_memory_history(max_entries=5000)
    exporter = profiled_session(tmp_path)
    path = exporter.export_snapshot()
    session = exporter.sessions[0]
    assert path == session / "memory_snapshot_rank0.pickle"

    info = check_complete_session(session)
    (entry,) = info.memory_snapshots
    assert (entry.file, entry.rank, entry.rank_from_name, entry.device_kind) == (path.name, 0, True, "cpu")
    assert entry.stacks == "python" and entry.max_entries == 5000 and entry.entries > 0
    clocks = entry.recording_start_clocks
    assert clocks.realtime_ns <= entry.first_entry_ns <= entry.last_entry_ns <= entry.export_clocks.realtime_ns
    snapshot = load_snapshot(path)
    assert snapshot["kinetoscope"]["session_id"] == info.identity.session_id
    assert snapshot["kinetoscope"]["clock"] == "CLOCK_REALTIME"
    assert summarize(snapshot).live_bytes == entry.live_bytes


def test_pytorch_memory_viz_reads_the_cpu_snapshot(tmp_path: Path) -> None:
    kinetoscope.memory.record_memory_history()
    exporter = profiled_session(tmp_path)
    held = [torch.empty(n) for n in (1000, 300_000)]
    snapshot = load_snapshot(exporter.export_snapshot())
    assert {seg["total_size"] for seg in snapshot["segments"]} >= {t.untyped_storage().nbytes() for t in held}
    stats = _memory_viz.segsum(snapshot)  # checks its own accounting and raises on mismatch
    assert f"segments: {len(snapshot['segments'])}" in stats
    trace = _memory_viz.trace(snapshot)
    assert "alloc" not in trace.splitlines()[0] and "del " in trace
    assert "test_memory.py" in _memory_viz.memory(snapshot, format_flamegraph=lambda lines: lines)
    html = _memory_viz.trace_plot(snapshot)
    assert "snapshot.pickle" in html and "Active Memory Timeline" in html


def test_export_before_any_session_fails_clearly() -> None:
    kinetoscope.memory.record_memory_history()
    exporter = Profiler(ProfileConfig(modes=[ProfileMode.RUNTIME]))
    with pytest.raises(SessionError, match="no session yet"):
        exporter.export_snapshot()


def test_export_without_history_fails_clearly(tmp_path: Path) -> None:
    exporter = profiled_session(tmp_path)
    with pytest.raises(SessionError, match="record_memory_history"):
        exporter.export_snapshot()
    check_complete_session(exporter.sessions[0])


@pytest.mark.parametrize("name", ["../escape.pickle", "memory.json", "trace.json", "a/b.pickle"])
def test_bad_names_are_refused(tmp_path: Path, name: str) -> None:
    kinetoscope.memory.record_memory_history()
    exporter = profiled_session(tmp_path)
    with pytest.raises(ConfigError, match="bad file name"):
        exporter.export_snapshot(name)


def test_same_name_twice_is_refused(tmp_path: Path) -> None:
    kinetoscope.memory.record_memory_history()
    exporter = profiled_session(tmp_path)
    exporter.export_snapshot("memory_snapshot_rank0.pickle")
    with pytest.raises(SessionError, match="already exists"):
        exporter.export_snapshot("memory_snapshot_rank0.pickle")


def test_multi_rank_name_without_rank_token_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    kinetoscope.memory.record_memory_history()
    exporter = profiled_session(tmp_path)
    with pytest.warns(UserWarning, match="no rank<N> token.*rank 1 of 2"):
        exporter.export_snapshot("snapshot.pickle")
    with pytest.warns(UserWarning, match="says rank 3, but this process is rank 1"):
        exporter.export_snapshot("memory_snapshot_rank3.pickle")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exporter.export_snapshot("memory_snapshot_rank1.pickle")
    info = check_complete_session(exporter.sessions[0])
    assert [(s.file, s.rank, s.rank_from_name) for s in info.memory_snapshots] == [
        ("snapshot.pickle", 1, False), ("memory_snapshot_rank3.pickle", 3, True),
        ("memory_snapshot_rank1.pickle", 1, True)]


def test_dump_prints_a_snapshot_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kinetoscope.cli import main as cli_main

    kinetoscope.memory.record_memory_history()
    exporter = profiled_session(tmp_path)
    path = exporter.export_snapshot()
    assert cli_main(["dump", str(path), "--limit", "2"]) == 0
    out = capsys.readouterr().out
    assert "memory snapshot" in out and "cpu-allocator-hook" in out and '"action": "alloc"' in out
    summary = json.loads(out.splitlines()[1])
    assert summary["live_blocks"] == ti.read_trace_info(exporter.sessions[0]).memory_snapshots[0].live_blocks

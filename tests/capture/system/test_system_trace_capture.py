"""RUNTIME at capture: a real CPU profile with gloo collectives and profile_memory fills ntrace.pb."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
from torch.profiler import profile

import kinetoscope
from kinetoscope.capture.profiling.environment import device_count
from kinetoscope.format.perfetto_packets.event_reader import DecodedEvent, iter_events
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti

from ..helpers import check_complete_session, tiny_model


@pytest.fixture
def gloo_group(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    monkeypatch.setenv("MASTER_PORT", str(29_000 + os.getpid() % 1000))
    dist.init_process_group("gloo", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def profile_steps(tmp_path: Path, **config: Any) -> Path:
    cfg = kinetoscope.ProfileConfig(profile_output_dir=tmp_path, **config)
    exporter = kinetoscope.Profiler(cfg)
    model, x = tiny_model()
    with profile(
        activities=kinetoscope.activities(),
        profile_memory=True,
        experimental_config=cfg,
        on_trace_ready=exporter.export_trace,
    ):
        for _ in range(3):
            model(x).sum().backward()
            tensor = torch.ones(10)
            dist.all_reduce(tensor)
            dist.all_reduce(tensor, async_op=True).wait()
            dist.barrier()
    assert exporter.current_session is not None
    return exporter.current_session


def runtime_events(session: Path) -> list[DecodedEvent]:
    return list(iter_events(session / layout.SYSTEM_TRACE))


def test_collectives_and_allocator_events_reach_the_system_trace(tmp_path: Path, gloo_group: Any) -> None:
    # GIVEN a real profile of training steps with gloo collectives and profile_memory=True
    session = profile_steps(tmp_path)
    info = check_complete_session(session)
    trace = json.loads((session / layout.TRACE_JSON).read_text())["traceEvents"]
    got = runtime_events(session)
    # THEN every gloo collective of trace.json is a runtime slice, linked to the c10d op that issued it
    gloo = [e for e in trace if str(e.get("name", "")).startswith("gloo:")]
    collectives = [e for e in got if e.kind == "slice" and e.name.startswith("gloo:")]
    assert len(collectives) == len(gloo) == 9
    callers = {e["args"]["External id"] for e in trace if str(e.get("name", "")).startswith("c10d::")}
    assert {e.annotations["caller External id"] for e in collectives} == callers
    # AND every allocator event is an instant, with the allocated bytes as a counter
    memory = [e for e in trace if e.get("name") == "[memory]"]
    assert len([e for e in got if e.kind == "instant"]) == len(memory) > 0
    assert [e.value for e in got if e.kind == "counter"] == [e["args"]["Total Allocated"] for e in memory]
    # AND timestamps are Kineto's, on the epoch clock: ts * 1000 + baseTimeNanoseconds
    base = info.profiler_base_time_ns
    assert sorted(e.ts_ns for e in collectives) == sorted(round(e["ts"] * 1000) + base for e in gloo)
    assert (info.event_counts.runtime_events, info.event_counts.allocator_events) == (9, len(memory))
    assert [m.files for m in info.modes if ti.mode_name(m.mode) == "RUNTIME"] == [["ntrace.pb"]]


@pytest.mark.skipif(device_count() > 0, reason="checks the CPU-only outcome")
def test_no_device_files_on_a_cpu_host(tmp_path: Path, gloo_group: Any) -> None:
    session = profile_steps(tmp_path, modes=[kinetoscope.ProfileMode.DEVICE])
    info = check_complete_session(session)
    assert not list(session.glob("device_*.pb")) and not (session / layout.SYSTEM_TRACE).exists()
    (device,) = info.modes
    assert "no accelerator" in device.reason


def test_drop_warning_names_kept_total_and_remedies() -> None:
    from collections import Counter

    from kinetoscope.capture.system.system_trace import drop_warnings
    from kinetoscope.convert.conversion import ConversionStats

    stats = ConversionStats(device_totals=Counter({0: 1_250_000, 1: 10}), device_kept=Counter({0: 1_000_000, 1: 10}))
    (message,) = drop_warnings(stats, 1_000_000)
    assert "device 0: kept the newest 1,000,000 of 1,250,000" in message
    for remedy in ("Raise max_events_per_device", "shorten the profiled window", "capture_enabled_for_devices"):
        assert remedy in message


def test_allocator_events_in_another_layout_take_the_general_path(tmp_path: Path) -> None:
    # GIVEN a trace whose allocator events are not in torch's own field order
    from kinetoscope.capture.system.system_trace import convert_trace
    from kinetoscope.convert import conversion
    from kinetoscope.format.perfetto_packets import perfetto as pf
    from kinetoscope.format.perfetto_packets.packet_files import SessionPacketFiles
    from kinetoscope.format.problems import ProblemLog

    def memory(ts: int, total: int) -> dict[str, Any]:
        args = {"Bytes": 8, "Total Allocated": total, "Device Type": 0, "Device Id": -1, "Addr": 16}
        return {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 1, "tid": 1, "ts": ts, "args": args}

    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"traceEvents": [memory(1, 8), memory(2, 16)]}))
    header = pf.FileHeader(
        file_kind="", session_id="h_pid_1/t", instance_id="h", hostname="h", pid=1, rank=0, local_rank=0, world_size=1
    )
    files = SessionPacketFiles(tmp_path, header, {pf.CLOCK_REALTIME: 1})
    # WHEN converted as export does
    stats = convert_trace(trace, files, conversion.ConvertOptions(base_ns=0, session_id="h_pid_1/t"), ProblemLog())
    # THEN every allocator event is there all the same
    assert stats.allocator_events == 2
    counters = [e.value for e in iter_events(tmp_path / layout.SYSTEM_TRACE) if e.kind == "counter"]
    assert counters == [8, 16]


def test_reading_every_event_writes_what_the_selective_path_writes(tmp_path: Path) -> None:
    # GIVEN a trace torch could write on an accelerator host: a launch, its kernel and flows, an allocation
    from kinetoscope.capture.system.system_trace import convert_trace
    from kinetoscope.convert import conversion
    from kinetoscope.format.perfetto_packets import perfetto as pf
    from kinetoscope.format.perfetto_packets.packet_files import SessionPacketFiles
    from kinetoscope.format.problems import ProblemLog

    launch_args = {"External id": 3, "correlation": 7}
    kernel_args = {"External id": 3, "device": 0, "stream": 7, "correlation": 7, "grid": [1, 2, 1]}
    memory_args = {"Total Reserved": 64, "Total Allocated": 8, "Bytes": 8, "Device Id": 0, "Device Type": 1, "Addr": 9}
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": 1, "dur": 9, "args": {}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 2, "dur": 1,
         "args": launch_args},
        {"ph": "s", "id": 7, "pid": 1, "tid": 1, "ts": 2, "cat": "ac2g", "name": "ac2g"},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 4, "dur": 2, "args": kernel_args},
        {"ph": "f", "id": 7, "pid": 0, "tid": 7, "ts": 4, "cat": "ac2g", "name": "ac2g", "bp": "e"},
        {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 5,
         "args": memory_args},
    ]
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"traceEvents": events}, indent=1))
    header = pf.FileHeader(
        file_kind="", session_id="h_pid_1/t", instance_id="h", hostname="h", pid=1, rank=0, local_rank=0, world_size=1
    )
    written: dict[bool, dict[str, list[tuple[Any, ...]]]] = {}
    for every_event in (False, True):
        out = tmp_path / str(every_event)
        out.mkdir()
        files = SessionPacketFiles(out, header, {pf.CLOCK_REALTIME: 1})
        options = conversion.ConvertOptions(base_ns=0, session_id="h_pid_1/t", expected_devices=(0,))
        # WHEN converted both ways
        stats = convert_trace(trace, files, options, ProblemLog(), every_event=every_event)
        assert (stats.runtime_events, stats.device_events, stats.allocator_events) == (1, 1, 1)
        written[every_event] = {p.name: sorted(map(_comparable, iter_events(p))) for p in out.glob("*.pb")}
    # THEN both ways write the same events (allocator events come last on the selective path)
    assert sorted(written[True]) == ["device_0.pb", "ntrace.pb"]
    assert written[True] == written[False]


def _comparable(event: DecodedEvent) -> tuple[Any, ...]:
    annotations = sorted((name, repr(value)) for name, value in event.annotations.items())
    flows = (event.flow_ids, event.terminating_flow_ids, event.correlation_id)
    return (event.kind, event.track.name, event.ts_ns, event.dur_ns, event.name, annotations, flows, event.value)

"""Kineto events -> system and device traces: layers, flows, lanes, filters, caps and bad events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kinetoscope.convert import conversion
from kinetoscope.convert import session_traces as st
from kinetoscope.format.kineto import trace_records
from kinetoscope.format.perfetto_packets import perfetto as pf
from kinetoscope.format.perfetto_packets.event_reader import DecodedEvent, iter_events
from kinetoscope.format.perfetto_packets.packet_files import SessionPacketFiles
from kinetoscope.format.problems import ProblemLog

BASE_NS = 1_700_000_000_000_000_000


def kernel(
    ts: float, corr: int, *, stream: int = 7, device: int = 0, dur: float = 2, name: str = "k"
) -> dict[str, Any]:
    args = {"device": device, "stream": stream, "correlation": corr, "grid": [1, 2, 3]}
    return {"ph": "X", "cat": "kernel", "name": name, "pid": device, "tid": stream, "ts": ts, "dur": dur, "args": args}


def launch(ts: float, corr: int, external: int = 1) -> dict[str, Any]:
    args = {"correlation": corr, "External id": external, "cbid": 211}
    return {
        "ph": "X",
        "cat": "cuda_runtime",
        "name": "cudaLaunchKernel",
        "pid": 9,
        "tid": 9,
        "ts": ts,
        "dur": 1,
        "args": args,
    }


def convert(
    tmp_path: Path, events: list[dict[str, Any]], **options: Any
) -> tuple[conversion.ConversionStats, ProblemLog]:
    header = pf.FileHeader(
        file_kind="", session_id="h_pid_9/t", instance_id="h", hostname="h", pid=9, rank=0, local_rank=0, world_size=1
    )
    files = SessionPacketFiles(tmp_path, header, {pf.CLOCK_REALTIME: BASE_NS})
    problems = ProblemLog()
    settings = conversion.ConvertOptions(base_ns=BASE_NS, session_id="h_pid_9/t", **options)
    records = trace_records.codec()
    batch = [(index, records.from_dict(event)) for index, event in enumerate(events)]
    stats = st.convert(lambda log: [batch], files, settings, problems, "t.json")
    return stats, problems


def read(path: Path) -> list[DecodedEvent]:
    return [event for event in iter_events(path) if event.kind != "counter"]


def test_launch_and_kernel_are_linked_by_a_flow(tmp_path: Path) -> None:
    # GIVEN a runtime launch and the kernel it caused, sharing correlation id 5
    stats, problems = convert(
        tmp_path,
        [
            launch(10.5, 5),
            kernel(12.25, 5),
            {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 9, "tid": 9, "ts": 10, "dur": 5},
        ],
    )
    # THEN the launch is in ntrace.pb and the kernel in device_0.pb, on one clock, linked by one flow id
    (call,) = read(tmp_path / "ntrace.pb")
    (execution,) = read(tmp_path / "device_0.pb")
    assert call.ts_ns == BASE_NS + 10_500 and execution.ts_ns == BASE_NS + 12_250
    assert execution.dur_ns == 2_000 and execution.track.name == "stream 7"
    assert call.flow_ids == execution.terminating_flow_ids and len(call.flow_ids) == 1
    assert call.annotations["External id"] == 1 and execution.annotations["grid"] == [1, 2, 3]
    assert (stats.runtime_events, stats.device_events, stats.framework_events) == (1, 1, 1)
    assert not problems


def test_flow_events_bind_executions_without_correlation(tmp_path: Path) -> None:
    # GIVEN an MTIA-style device event without correlation, bound by its ac2g flow event
    device_event = {
        "ph": "X",
        "cat": "mtia_ccp_events",
        "name": "exec",
        "pid": 17,
        "tid": 3,
        "ts": 20,
        "dur": 4,
        "args": {},
    }
    runtime = {
        "ph": "X",
        "cat": "mtia_runtime",
        "name": "launch",
        "pid": 9,
        "tid": 9,
        "ts": 19,
        "dur": 1,
        "args": {"correlation": 77, "device": 17},
    }
    flow_end = {"ph": "f", "id": 77, "pid": 17, "tid": 3, "ts": 20, "cat": "ac2g", "name": "ac2g", "bp": "e"}
    convert(tmp_path, [runtime, device_event, flow_end])
    (call,) = read(tmp_path / "ntrace.pb")
    (execution,) = read(tmp_path / "device_17.pb")
    assert call.flow_ids == execution.terminating_flow_ids != ()


def test_overlapping_executions_on_one_stream_get_lanes(tmp_path: Path) -> None:
    # GIVEN three kernels on stream 7; the second starts before the first ends (a CUDA graph, PDL)
    convert(tmp_path, [kernel(0, 1, dur=10), kernel(5, 2, dur=10), kernel(20, 3, dur=1)])
    got = read(tmp_path / "device_0.pb")
    # THEN all are kept, and the overlapping one is on a second lane of the stream
    assert sorted((e.ts_ns - BASE_NS, e.track.name) for e in got) == [
        (0, "stream 7"),
        (5_000, "stream 7 · lane 2"),
        (20_000, "stream 7"),
    ]


def test_cap_keeps_the_newest_executions_per_device(tmp_path: Path) -> None:
    # GIVEN 5 kernels on device 0 (out of time order) and 2 on device 1, with a cap of 3
    events = [kernel(ts, ts, device=0) for ts in (40, 10, 50, 20, 30)] + [
        kernel(5, 100, device=1),
        kernel(6, 101, device=1),
    ]
    stats, _ = convert(tmp_path, events, max_events_per_device=3)
    # THEN device 0 keeps its 3 newest; the drops are counted per device
    assert sorted(e.ts_ns - BASE_NS for e in read(tmp_path / "device_0.pb")) == [30_000, 40_000, 50_000]
    assert len(read(tmp_path / "device_1.pb")) == 2
    assert stats.drops() == {0: (3, 5)}


def test_cap_counts_ties_exactly(tmp_path: Path) -> None:
    stats, _ = convert(tmp_path, [kernel(10, i) for i in range(4)], max_events_per_device=2)
    assert len(read(tmp_path / "device_0.pb")) == 2
    assert stats.drops() == {0: (2, 4)}


def test_device_filter_keeps_listed_devices_only(tmp_path: Path) -> None:
    sync = {
        "ph": "X",
        "cat": "cuda_sync",
        "name": "Event Sync",
        "pid": 1,
        "tid": -1,
        "ts": 3,
        "dur": 1,
        "args": {"device": 1, "correlation": 9},
    }
    stats, _ = convert(
        tmp_path,
        [kernel(1, 1, device=0), kernel(2, 2, device=1), sync],
        device_enabled=lambda device: device == 0,
        expected_devices=(0,),
    )
    assert sorted(p.name for p in tmp_path.glob("*.pb")) == ["device_0.pb", "ntrace.pb"]
    assert read(tmp_path / "ntrace.pb") == []
    assert stats.filtered_events == 2


def test_bad_events_are_skipped_counted_and_named(tmp_path: Path) -> None:
    events = [
        {"ph": "X", "cat": "kernel", "name": "neg", "pid": 0, "tid": 7, "ts": 5, "dur": -1},
        {"ph": "X", "cat": "kernel", "name": "no ts", "pid": 0, "tid": 7, "dur": 1},
        {"ph": "X", "cat": "cuda_runtime", "pid": 9, "tid": 9, "ts": 5, "dur": 1},
        {"ph": "X", "cat": "weird_new_thing", "name": "x", "pid": 0, "tid": 0, "ts": 5, "dur": 1},
        kernel(10_000, 1),
        kernel(20, 2),
    ]
    stats, problems = convert(tmp_path, events, window_ns=(BASE_NS, BASE_NS + 1_000_000))
    assert problems.counts() == {"negative_duration": 1, "missing_field": 2, "unknown_category": 1, "outside_window": 1}
    assert [p.where for p in problems.records] == ["event 0", "event 1", "event 2", "event 3", "event 4"]
    assert [e.name for e in read(tmp_path / "device_0.pb")] == ["k"]
    assert stats.skipped == problems.counts()


def test_ids_above_two_to_the_63_survive(tmp_path: Path) -> None:
    big = 10159970886766084423
    convert(tmp_path, [launch(1, big, external=big), kernel(2, big)])
    (call,) = read(tmp_path / "ntrace.pb")
    (execution,) = read(tmp_path / "device_0.pb")
    assert call.correlation_id == big and call.annotations["External id"] == big
    assert call.flow_ids == execution.terminating_flow_ids


def test_gloo_collectives_are_paired_with_their_c10d_ops(tmp_path: Path) -> None:
    # GIVEN two c10d::allreduce_ ops on the main thread, run later by gloo on its own thread
    def op(ts: float, ext: int) -> dict[str, Any]:
        return {
            "ph": "X",
            "cat": "cpu_op",
            "name": "c10d::allreduce_",
            "pid": 9,
            "tid": 9,
            "ts": ts,
            "dur": 2,
            "args": {"External id": ext},
        }

    def run(ts: float, ext: int) -> dict[str, Any]:
        return {
            "ph": "X",
            "cat": "user_annotation",
            "name": "gloo:all_reduce",
            "pid": 9,
            "tid": 12,
            "ts": ts,
            "dur": 3,
            "args": {"External id": ext, "Input Dims": [[10]]},
        }

    convert(tmp_path, [run(21, 501), run(11, 500), op(10, 60), op(20, 61)])
    got = read(tmp_path / "ntrace.pb")
    assert [(e.track.name, e.annotations["External id"], e.annotations["caller External id"]) for e in got] == [
        ("thread 12 · collectives", 500, 60),
        ("thread 12 · collectives", 501, 61),
    ]


def test_allocator_events_become_instants_and_counters(tmp_path: Path) -> None:
    def memory(ts: float, size: int, total: int, device_type: int = 1) -> dict[str, Any]:
        args = {
            "Total Reserved": 4096,
            "Total Allocated": total,
            "Bytes": size,
            "Device Id": 0,
            "Device Type": device_type,
            "Addr": 140,
        }
        return {
            "ph": "i",
            "cat": "cpu_instant_event",
            "s": "t",
            "name": "[memory]",
            "pid": 9,
            "tid": 9,
            "ts": ts,
            "args": args,
        }

    stats, _ = convert(tmp_path, [memory(1, 512, 512), memory(2, -512, 0), memory(3, 8, 8, device_type=0)])
    got = list(iter_events(tmp_path / "ntrace.pb"))
    instants = [(e.track.name, e.annotations) for e in got if e.kind == "instant"]
    assert instants[0] == ("cuda:0 allocator", {"Bytes": 512, "Addr": 140})
    counters = {(e.track.name, e.value) for e in got if e.kind == "counter"}
    assert ("cuda:0 allocated bytes", 512) in counters and ("cuda:0 reserved bytes", 4096) in counters
    assert ("cpu allocated bytes", 8) in counters
    assert stats.allocator_events == 3

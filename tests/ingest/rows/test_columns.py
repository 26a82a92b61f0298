"""One reader batch -> columns: layers, clock, ids, args, collectives, side records."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from kinetoscope.format.kineto import trace_records
from kinetoscope.format.problems import ProblemLog
from kinetoscope.ingest.rows.allocations import MemoryEvents
from kinetoscope.ingest.rows.batch import SessionContext
from kinetoscope.ingest.rows.columns import KindCodes, columnize, epoch_ns

from ...conftest import use_record_codec
from ..helpers import HOST_PID, kernel, x

CTX = SessionContext("trace.json", rank=3, slot=1, session="s", base_ns=1_000_000_000_000, host_pid=HOST_PID)


@pytest.fixture(autouse=True, params=["msgspec", "dicts"])
def codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> trace_records.RecordCodec:
    """Every test runs on records decoded by msgspec (when installed) and on records made from dicts."""
    return use_record_codec(str(request.param), monkeypatch)


def _records(events: list[dict[str, Any]]) -> list[Any]:
    """Records as the reader gives them; the JSON is indented over several lines, as Kineto writes it."""
    codec = trace_records.codec()
    if codec.decode_span is None:
        return [codec.from_dict(e) for e in events]
    return codec.decode_span(json.dumps(events, indent=2).encode())


def _columns(events: list[dict]) -> tuple[dict, ProblemLog]:
    problems = ProblemLog()
    batch = columnize(list(enumerate(_records(events))), CTX, KindCodes(problems, "trace.json"), problems)
    return {"rows": batch.rows.to_pylist(), "batch": batch}, problems


def test_layers_come_from_categories_and_memory_records_are_runtime() -> None:
    out, problems = _columns(
        [
            x("aten::mm", 1, 2),
            x("cudaLaunchKernel", 1.5, 0.2, cat="cuda_runtime", correlation=9),
            kernel("gemm", 3, 1, correlation=9),
            {
                "ph": "i",
                "name": "[memory]",
                "pid": HOST_PID,
                "tid": 1,
                "ts": 4,
                "s": "t",
                "args": {"Addr": 1, "Bytes": 8},
            },
            x("mystery", 5, 1, cat="brand_new"),
        ]
    )
    layers = {r["name"]: r["layer"] for r in out["rows"]}
    assert layers == {
        "aten::mm": "framework",
        "cudaLaunchKernel": "runtime",
        "gemm": "device",
        "[memory]": "runtime",
        "mystery": "framework",
    }
    kinds = {r["name"]: r["kind"] for r in out["rows"]}
    assert kinds == {
        "aten::mm": "op",
        "cudaLaunchKernel": "runtime",
        "gemm": "kernel",
        "[memory]": "allocation",
        "mystery": "marker",
    }
    assert problems.counts() == {"unknown_category": 1}


def test_timestamps_keep_nanoseconds_for_relative_and_epoch_microseconds() -> None:
    # GIVEN relative µs with a fraction, and epoch µs (ints above 2^50)
    got = epoch_ns(np.asarray([5172030936568.347, 1694128201435418.0]), 7)
    assert got.tolist() == [5172030936568347 + 7, 1694128201435418000 + 7]


def test_device_rows_take_device_and_stream_and_the_host_pid() -> None:
    out, _ = _columns([kernel("k", 1, 1, correlation=5, stream=13, device=2)])
    row = out["rows"][0]
    assert (row["device"], row["stream"], row["tid"], row["pid"]) == (2, 13, -1, HOST_PID)
    assert row["id"] == (3 << 40) | (1 << 32) | 0
    assert row["ts_ns"] == CTX.base_ns + 1000 and row["dur_ns"] == 1000


def test_ids_above_int64_wrap_and_args_keep_everything_else() -> None:
    out, _ = _columns([x("record_param_comms", 1, 1, **{"External id": 2**64 - 1, "Comms Id": 2**63 + 5})])
    row = out["rows"][0]
    assert row["external_id"] == -1
    assert json.loads(row["args"])["Comms Id"] == 2**63 + 5


def test_collectives_from_metadata_then_from_nccl_kernel_names() -> None:
    out, _ = _columns(
        [
            kernel("ncclDevKernel_AllGather_RING_LL(ncclDevComm*)", 1, 1, correlation=1),
            kernel("anything", 2, 1, correlation=2, **{"Collective name": "allreduce"}),
            kernel("elementwise", 3, 1, correlation=3),
        ]
    )
    assert [r["collective"] for r in out["rows"]] == ["allgather", "allreduce", ""]


def test_negative_duration_is_kept_as_zero_and_counted() -> None:
    out, problems = _columns([x("op", 1, -3)])
    assert out["rows"][0]["dur_ns"] == 0
    assert problems.counts() == {"negative_duration": 1}


def test_profiler_markers_are_not_events_and_flows_counters_are_side_records() -> None:
    out, _ = _columns(
        [
            {
                "ph": "X",
                "cat": "Trace",
                "name": "PyTorch Profiler (0)",
                "pid": "Spans",
                "tid": "PyTorch Profiler",
                "ts": 0,
                "dur": 9,
            },
            {"ph": "i", "s": "g", "name": "Iteration Start", "pid": "Traces", "tid": "x", "ts": 0},
            {"ph": "s", "cat": "fwdbwd", "name": "fwdbwd", "id": 3, "pid": HOST_PID, "tid": 1, "ts": 1},
            {"ph": "s", "cat": "ac2g", "name": "ac2g", "id": 9, "pid": HOST_PID, "tid": 1, "ts": 1},
            {"ph": "C", "name": "GPU 0 util", "pid": 0, "ts": 2, "args": {"value": 50}},
        ]
    )
    batch = out["batch"]
    assert out["rows"] == []
    assert len(batch.flow_points) == 1 and batch.correlation_flows == 1
    assert batch.counter_rows() == [("GPU 0 util", CTX.base_ns + 2000, 50.0, "", 0)]


def test_a_pid_that_is_neither_a_number_nor_a_name_is_kept_as_a_row() -> None:
    # GIVEN events whose pid is a float, a digit string and null (no profiler marker among them)
    events = [{"ph": "X", "cat": "cpu_op", "name": f"op{i}", "pid": pid, "tid": 1, "ts": i, "dur": 1}
              for i, pid in enumerate([1.5, "42", None])]  # fmt: skip
    # WHEN they are made columns THEN each is a row (a batch with no marker is not read again and again)
    out, _ = _columns(events)
    assert [row["name"] for row in out["rows"]] == ["op0", "op1", "op2"]


def test_memory_records_give_allocator_counters_and_join_keys() -> None:
    args = {"Device Type": 1, "Device Id": 0, "Addr": 77, "Bytes": 512, "Total Allocated": 4096, "Total Reserved": 8192}
    out, _ = _columns([{"ph": "i", "name": "[memory]", "pid": HOST_PID, "tid": 1, "ts": 1, "s": "t", "args": args}])
    batch = out["batch"]
    assert sorted(c[0] for c in batch.counter_rows()) == ["device 0 memory allocated", "device 0 memory reserved"]
    memory = MemoryEvents()
    memory.extend(*batch.memory_events)
    assert memory.by_block == {(77, 512): [(CTX.base_ns + 1000, CTX.id_base)]}


def test_allocator_fields_spelled_otherwise_are_read_one_by_one() -> None:
    # GIVEN allocator instants as Kineto writes them, and one whose ids and sizes are spelled as text
    plain = {"Device Type": 1, "Device Id": 0, "Addr": 77, "Bytes": 512, "Total Allocated": 64, "Total Reserved": 128}
    spelled = {**plain, "Device Id": "1", "Addr": "0x4d", "Bytes": 512.0, "Total Reserved": "128"}
    memory = {"ph": "i", "name": "[memory]", "pid": HOST_PID, "tid": 1, "s": "t"}
    out, _ = _columns([{**memory, "ts": 1, "args": plain}, {**memory, "ts": 2, "args": spelled}])
    batch = out["batch"]
    # THEN both are read as ids and numbers: the text device id names device 1, a total given as text is left out
    assert [r["device"] for r in out["rows"]] == [0, 1]
    assert [(c[0], c[2]) for c in batch.counter_rows()] == [
        ("device 0 memory allocated", 64.0),
        ("device 0 memory reserved", 128.0),
        ("device 1 memory allocated", 64.0),
    ]
    events = MemoryEvents()
    events.extend(*batch.memory_events)
    assert sorted(events.by_block) == [(77, 512)] and len(events.by_block[(77, 512)]) == 2


def test_allocations_as_kineto_writes_them_are_kept_as_arrays_not_objects() -> None:
    # GIVEN allocator instants with integer addresses and sizes, one of them past 64 bits
    memory = {"ph": "i", "name": "[memory]", "pid": HOST_PID, "tid": 1, "s": "t"}
    device = {"Device Type": 1, "Device Id": 0}
    plain = [{**memory, "ts": t, "args": {**device, "Addr": 77 + t, "Bytes": -t}} for t in (1, 2)]
    wide = {**memory, "ts": 3, "args": {**device, "Addr": 1 << 64, "Bytes": 8}}
    # WHEN they are made columns THEN a batch's addresses and sizes that fit are 64-bit arrays, the others as spelled
    addrs, sizes, times, ids = _columns(plain)[0]["batch"].memory_events
    assert isinstance(addrs, np.ndarray) and addrs.dtype == np.int64 and addrs.tolist() == [78, 79]
    assert isinstance(sizes, np.ndarray) and sizes.tolist() == [-1, -2] and len(times) == len(ids) == 2
    wide_batch = _columns([*plain, wide])[0]["batch"]
    assert wide_batch.memory_events[0] == [78, 79, 1 << 64]
    # AND the join keys read the same either way
    events = MemoryEvents()
    events.extend(*wide_batch.memory_events)
    assert sorted(events.by_block) == [(78, -1), (79, -2), (1 << 64, 8)]


def test_host_collectives_are_runtime_and_name_their_collective() -> None:
    # GIVEN a CPU job: gloo's annotation on its own thread and the c10d op that issued it
    out, _ = _columns(
        [
            x("gloo:all_reduce", 1, 5, cat="user_annotation", tid=7),
            x("c10d::allreduce_", 0.5, 0.2),
            x("aten::mm", 2, 1),
        ]
    )
    rows = {r["name"]: r for r in out["rows"]}
    # THEN the annotation is runtime (as in ntrace.pb) and names its collective; the op stays framework
    assert (rows["gloo:all_reduce"]["layer"], rows["gloo:all_reduce"]["collective"]) == ("runtime", "allreduce")
    assert rows["c10d::allreduce_"]["layer"] == "framework"
    assert (rows["aten::mm"]["layer"], rows["aten::mm"]["collective"]) == ("framework", "")


def test_args_column_is_the_recorded_args_text_on_one_line() -> None:
    # GIVEN events with args (Kineto indents them), without args, and with args that are not an object
    op = x("aten::mm", 1, 1, **{"External id": 3, "Input Dims": [[2, 3], []], "Input type": ["float"]})
    bare = {"ph": "X", "cat": "cpu_op", "name": "bare", "pid": HOST_PID, "tid": 1, "ts": 2, "dur": 1}
    odd = {**bare, "name": "odd", "args": ["not", "an", "object"]}
    out, _ = _columns([op, bare, odd])
    # THEN the column holds the args as written, compact, and {} where there is no args object
    texts = [r["args"] for r in out["rows"]]
    assert texts == ['{"External id":3,"Input Dims":[[2,3],[]],"Input type":["float"]}', "{}", "{}"]
    assert out["rows"][0]["external_id"] == 3


def test_fields_that_are_absent_or_null_take_their_defaults() -> None:
    # GIVEN an instant without dur and a slice whose ids are null
    instant = {"ph": "i", "cat": "cpu_instant_event", "name": "mark", "pid": HOST_PID, "tid": 1, "ts": 3, "s": "t"}
    nulls = x("op", 1, 1, correlation=None, **{"External id": None, "external id": 5})
    out, problems = _columns([instant, nulls])
    rows = {r["name"]: r for r in out["rows"]}
    # THEN durations default to 0, ids to -1, and the lowercase external id is the fallback
    assert rows["mark"]["dur_ns"] == 0
    assert (rows["op"]["correlation"], rows["op"]["external_id"]) == (-1, 5)
    assert problems.counts() == {}


def test_bad_numbers_are_problems_and_allocator_totals_must_be_numbers() -> None:
    args = {"Device Type": 1, "Device Id": 0, "Addr": 1, "Bytes": 8, "Total Allocated": 64, "Total Reserved": None}
    memory = {"ph": "i", "name": "[memory]", "pid": HOST_PID, "tid": 1, "ts": 1, "s": "t", "args": args}
    out, problems = _columns([x("op", "late", 1), memory])
    # THEN the bad ts is 0 and recorded; the null total is skipped, the other kept
    assert problems.counts() == {"bad_field": 1}
    assert [c[0] for c in out["batch"].counter_rows()] == ["device 0 memory allocated"]


def test_a_number_beyond_float64_is_a_problem_not_a_cast_warning(recwarn: pytest.WarningsRecorder) -> None:
    # GIVEN a slice whose dur is 1e400: msgspec refuses such a span, and the reader's walk event by
    # event (Python's json) reads it as inf
    events = [x("op", 1, 1), x("huge", 2, 7)]
    events[1]["dur"] = json.loads("1e400")
    records = [trace_records.codec().from_dict(e) for e in events]
    problems = ProblemLog()
    batch = columnize(list(enumerate(records)), CTX, KindCodes(problems, "trace.json"), problems)
    # THEN its dur is 0, the event is named in a bad_field problem, and numpy warned of nothing
    assert [(r["name"], r["dur_ns"]) for r in batch.rows.to_pylist()] == [("op", 1000), ("huge", 0)]
    assert problems.counts() == {"bad_field": 1}
    assert "event 1" in str(problems.records[0]) and "beyond float64" in str(problems.records[0])
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


@pytest.mark.parametrize("ts", [1e308, -1e300, float("nan")])
def test_a_timestamp_beyond_int64_nanoseconds_is_a_problem_not_garbage(
    recwarn: pytest.WarningsRecorder, ts: float
) -> None:
    # GIVEN a slice whose ts is 1e308 µs (its nanoseconds overflow int64) or NaN
    events = [x("op", 1, 1), x("far", 2, 7)]
    events[1]["ts"] = ts
    records = [trace_records.codec().from_dict(e) for e in events]
    problems = ProblemLog()
    batch = columnize(list(enumerate(records)), CTX, KindCodes(problems, "trace.json"), problems)
    # THEN its ts reads as 0 with a bad_field problem naming the event, and numpy warned of nothing
    assert [r["name"] for r in batch.rows.to_pylist()] == ["op", "far"]
    assert batch.rows.to_pylist()[1]["ts_ns"] == CTX.base_ns
    assert problems.counts() == {"bad_field": 1}
    assert "event 1" in str(problems.records[0]) and "within 2^62 ns" in str(problems.records[0])
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]

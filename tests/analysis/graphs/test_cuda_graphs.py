"""CUDA graph replays: on tiny tables and Kineto traces built here (matched to their capture, or
refused with a reason), and on the public traces that replay graphs, against counts taken straight
from their JSON."""

from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from kinetoscope.analysis import ANALYSES_BY_NAME, needed_columns, prepared
from kinetoscope.analysis.graphs import graph_kernels
from kinetoscope.importer.trace_import import ImportOptions, import_trace
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from ...conftest import SHARED
from ..test_analyses import events

CORPUS = SHARED / "datasets" / "public-traces" / "hta" / "tests" / "data"
REPLAYS = ANALYSES_BY_NAME["cuda_graph_replays"]
CAPTURE_OPS = ANALYSES_BY_NAME["cuda_graph_capture_ops"]
UNMATCHED = ANALYSES_BY_NAME["cuda_graph_unmatched"]


def _built(with_capture: bool) -> dict:
    runtime = {"category": "cuda_runtime", "layer": "runtime"}
    kernel = {"category": "kernel", "layer": "device", "device": 0, "tid": 7}
    rows = [
        {"name": "CompiledFunction", "ts_ns": 0, "dur_ns": 1_000},  # 0
        {**runtime, "name": "cudaGraphLaunch", "ts_ns": 10, "dur_ns": 20, "parent_id": 0, "correlation": 5},  # 1
        {**kernel, "name": "triton_poi_fused_add_0", "ts_ns": 100, "dur_ns": 300, "op_id": 0, "launch_id": 1},
        {**kernel, "name": "triton_red_fused_sum_1", "ts_ns": 400, "dur_ns": 200, "op_id": 0, "launch_id": 1},
        {"name": "aten::mm", "ts_ns": 2_000, "dur_ns": 100},  # 4
        {**runtime, "name": "cudaLaunchKernel", "ts_ns": 2_010, "dur_ns": 5, "parent_id": 4, "correlation": 6},  # 5
        {**kernel, "name": "sgemm", "ts_ns": 2_100, "dur_ns": 500, "op_id": 4, "launch_id": 5},
    ]
    if with_capture:
        rows.append({**runtime, "name": "cudaStreamBeginCapture", "ts_ns": 3_000, "dur_ns": 5})
    return {"events": events(rows)}


def test_replayed_work_is_counted_under_the_op_around_the_graph_launch() -> None:
    (row,) = REPLAYS(_built(with_capture=False)).to_pylist()
    assert (row["op"], row["graph_launches"], row["kernels"], row["gpu_ns"]) == ("CompiledFunction", 1, 2, 500)
    assert row["pct_of_busy"] == 50.0 and row["capture_in_trace"] is False  # 500 of 1000 ns busy
    assert REPLAYS(_built(with_capture=True)).to_pylist()[0]["capture_in_trace"] is True
    # tables with no args, stacks or frames: the capture (no launch in it) is still weighed
    (unmatched,) = UNMATCHED(_built(with_capture=True)).to_pylist()
    assert (unmatched["reason"], unmatched["launches_per_capture"]) == ("no capture with as many launches", "0")
    assert CAPTURE_OPS(_built(with_capture=True)).num_rows == 0


def test_no_graph_no_rows() -> None:
    no_graph = {"events": _built(with_capture=False)["events"].slice(4)}
    assert REPLAYS(no_graph).num_rows == 0


def _from_json(path: Path) -> dict[str, tuple[int, int, int]]:
    """(graph launches, replayed device rows, their ns) per innermost cpu_op around each launch."""
    with gzip.open(path, "rt") as handle:
        trace = json.load(handle)["traceEvents"]
    launches = [e for e in trace if e.get("name") == "cudaGraphLaunch"]
    ops = [e for e in trace if e.get("cat") == "cpu_op"]
    op_of = {}
    for call in launches:
        around = [o for o in ops if o["tid"] == call["tid"] and o["ts"] <= call["ts"] <= o["ts"] + o["dur"]]
        op_of[call["args"]["correlation"]] = max(around, key=lambda o: o["ts"])["name"]
    count: Counter[str] = Counter(op_of.values())
    kernels: Counter[str] = Counter()
    dur_us: Counter[str] = Counter()
    for work in trace:
        if work.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and work["args"].get("correlation") in op_of:
            kernels[op_of[work["args"]["correlation"]]] += 1
            dur_us[op_of[work["args"]["correlation"]]] += work["dur"]
    return {op: (count[op], kernels[op], round(dur_us[op] * 1000)) for op in count}


@pytest.mark.parametrize("trace", ["negative_queue_length_values_check/rank0.json.gz", "trace_diff/test/test.json.gz"])
def test_public_graph_replays_match_the_json(tmp_path: Path, trace: str) -> None:
    if not (CORPUS / trace).exists():
        pytest.skip("public trace corpus not present")
    local = tmp_path / Path(trace).name
    shutil.copy(CORPUS / trace, local)
    import_trace(local, ImportOptions(out_dir=tmp_path / "prof"))
    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")).status in ("ok", "partial")
    with open_dataset(tmp_path / "ds") as ds:
        found = REPLAYS(ds.load(needed_columns((REPLAYS,)))).to_pylist()
        tables = ds.load(needed_columns((CAPTURE_OPS, UNMATCHED)))
        by_capture, unmatched = CAPTURE_OPS(tables).to_pylist(), UNMATCHED(tables).to_pylist()
    expected = _from_json(local)
    assert {r["op"]: (r["graph_launches"], r["kernels"], r["gpu_ns"]) for r in found} == expected
    assert all(r["capture_in_trace"] is False and r["kernels_matched"] == 0 for r in found)  # captured before
    assert by_capture == []
    assert {r["op"]: (r["graph_launches"], r["kernels"], r["gpu_ns"]) for r in unmatched} == expected
    assert {r["reason"] for r in unmatched} == {"no capture in the trace"}


# Kineto JSON as torch.profiler writes it. Runtime calls carry `cbid` and `correlation`
# (libkineto/src/CuptiActivity.cpp, RuntimeActivity::metadataJson); kernels carry `device`,
# `stream`, `correlation`, ... and `graph id` / `graph node id` (CUPTI's graphId / graphNodeId,
# libkineto/src/CudaMetadataFields.h; 0 outside graphs, as in the public
# kineto/docs/traces/before_fix_trace.json). Every kernel of one replay has the correlation id
# of its cudaGraphLaunch, and a launch made during stream capture runs nothing, so no kernel
# has its correlation id (CUPTI records no activity for it). HIP launches name their kernel in a
# `kernel` arg (roctracer, as in the public hta amd_trace/mi250_minitoy_train_ROCm6_2_kineto).
# Inductor's launcher opens a record function named as its kernel while the profiler runs
# (torch/_inductor/runtime/triton_heuristics.py, `_RecordFunctionFast(kernel_name, ...)`).
T0_US = 1_712_867_402_000_000
PID, MAIN, STREAM = 3727853, 3727853, 7
MM = ("aten::mm", [[64, 32], [32, 16]], ["float", "float"], "ampere_sgemm_64x32_nn")
RELU = ("aten::relu", [[64, 16]], ["float"], "vectorized_elementwise_kernel_relu")
ADD = ("aten::add", [[64, 16], [64, 16]], ["float", "float"], "vectorized_elementwise_kernel_add")
COPY = ("aten::copy_", [[64, 16], [64, 16]], ["float", "float"], "Memcpy DtoD (Device -> Device)")
KERNEL_US = {"ampere_sgemm_64x32_nn": 30, "vectorized_elementwise_kernel_relu": 4}


class _Trace:
    """One rank's Kineto trace, written event by event with ids handed out in order."""

    def __init__(self, runtime: str = "cuda", pid: int = PID) -> None:
        self.runtime, self.pid, self.events, self.next_id, self.graph = runtime, pid, [], 1, 0
        self.events.append(
            {
                "ph": "X",
                "cat": "Trace",
                "name": "PyTorch Profiler (0)",
                "pid": "Spans",
                "tid": "PyTorch Profiler",
                "ts": T0_US,
                "dur": 10_000_000,
                "args": {"Op count": 0},
            }
        )

    def _id(self) -> int:
        self.next_id += 1
        return self.next_id

    def x(self, cat: str, name: str, ts: float, dur: float, *, tid: int = MAIN, pid: int = -1, **args: object) -> None:
        where = {"pid": self.pid if pid < 0 else pid, "tid": self.pid if tid == MAIN else tid}
        self.events.append({"ph": "X", "cat": cat, "name": name, **where, "ts": T0_US + ts, "dur": dur, "args": args})

    def call(self, name: str, ts: float, ext: int = 0, dur: float = 2, **args: object) -> int:
        corr = self._id()
        self.x("cuda_runtime", f"{self.runtime}{name}", ts, dur, **{"External id": ext, "correlation": corr, **args})
        return corr

    def kernel(self, name: str, ts: float, corr: int, *, graph: int = 0, node: int = 0, stream: int = STREAM) -> float:
        dur = KERNEL_US.get(name, 3)
        self.x(
            "gpu_memcpy" if name.startswith("Memcpy") else "kernel",
            name,
            ts,
            dur,
            tid=stream,
            pid=0,
            queued=0,
            device=0,
            context=1,
            stream=stream,
            correlation=corr,
            grid=[1, 1, 1],
            block=[128, 1, 1],
            **{"graph id": graph, "graph node id": node},
        )
        return ts + dur

    def capture(
        self,
        ts: float,
        ops: list[tuple[str, list, list, str]],
        *,
        frame: str = "model.py(12): forward",
        named: bool = False,
        op_named_as_kernel: bool = False,
        ends: bool = True,
    ) -> float:
        """A stream capture of one launch per op, under one Python frame; returns its end."""
        self.x("python_function", frame, ts - 1, 20 * len(ops) + 30, **{"Python id": self._id()})
        self.call("StreamBeginCapture", ts)
        cursor = ts + 10
        for name, dims, types, kernel in ops:
            ext = self._id()
            op = kernel if op_named_as_kernel else name
            self.x("cpu_op", op, cursor, 15, **{"External id": ext, "Input Dims": dims, "Input type": types})
            launch = {"kernel": kernel} if named else {}
            if kernel.startswith("Memcpy"):
                self.call("MemcpyAsync", cursor + 5, ext, cbid=41)
            else:
                self.call("LaunchKernel", cursor + 5, ext, cbid=211, **launch)
            cursor += 20
        if ends:
            self.call("StreamEndCapture", cursor)
            self.call("GraphInstantiate", cursor + 5, dur=10)
        self.graph += 1
        return cursor + 20

    def replay(self, ts: float, kernels: list[str], graph: int = 1, streams: list[int] | None = None) -> float:
        """One graph launch under a `replay_step` annotation, and the kernels it ran (on ``streams``,
        one per kernel; default all on one); returns its end."""
        ext = self._id()
        self.x("user_annotation", "replay_step", ts, 10, **{"External id": ext})
        corr = self.call("GraphLaunch", ts + 2, ext, dur=5, cbid=311)
        cursor = ts + 20
        for node, (name, stream) in enumerate(zip(kernels, streams or [STREAM] * len(kernels), strict=True), start=1):
            cursor = self.kernel(name, cursor, corr, graph=graph, node=node, stream=stream) + 1
        return cursor + 50

    def eager(self, ts: float, op: tuple[str, list, list, str]) -> float:
        ext = self._id()
        self.x("cpu_op", op[0], ts, 10, **{"External id": ext, "Input Dims": op[1], "Input type": op[2]})
        corr = self.call("LaunchKernel", ts + 2, ext, cbid=211)
        return self.kernel(op[3], ts + 20, corr) + 50

    def dataset(self, tmp_path: Path) -> dict:
        return _dataset(tmp_path, self)


def _dataset(tmp_path: Path, *traces: _Trace) -> dict:
    """The traces, all of rank 0, imported as its sessions and ingested; the tables the analyses read."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    for trace in traces:
        path = tmp_path / f"rank0.{trace.pid}.pt.trace.json"
        head = {"schemaVersion": 1, "distributedInfo": {"rank": 0}, "traceName": str(path)}
        devices = [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}]
        path.write_text(json.dumps({**head, "deviceProperties": devices, "traceEvents": trace.events}))
        import_trace(path, ImportOptions(out_dir=tmp_path / "prof"))
    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")).status == "ok"
    with open_dataset(tmp_path / "ds") as ds:
        return dict(ds.load(needed_columns((REPLAYS, CAPTURE_OPS, UNMATCHED))))


def _results(tables: dict) -> tuple[list[dict], list[dict], list[dict]]:
    return REPLAYS(tables).to_pylist(), CAPTURE_OPS(tables).to_pylist(), UNMATCHED(tables).to_pylist()


def test_replayed_kernels_take_the_op_shapes_and_frame_of_their_capture(tmp_path: Path) -> None:
    trace = _Trace()
    cursor = trace.capture(100, [MM, RELU])
    for _ in range(3):
        cursor = trace.replay(cursor, [MM[3], RELU[3]])
    replays, by_capture, unmatched = _results(trace.dataset(tmp_path))
    assert [(r["op"], r["graph_launches"], r["kernels"], r["kernels_matched"]) for r in replays] == [
        ("replay_step", 3, 6, 6)
    ]
    assert replays[0]["capture_in_trace"] is True and unmatched == []
    assert [
        (r["op"], r["input_dims"], r["input_types"], r["frame"], r["matched_by"], r["graph_launches"], r["kernels"])
        for r in by_capture
    ] == [
        ("aten::mm", "[[64,32],[32,16]]", '["float","float"]', "forward (model.py:12)", "order", 3, 3),
        ("aten::relu", "[[64,16]]", '["float"]', "forward (model.py:12)", "order", 3, 3),
    ]
    assert [r["gpu_ns"] for r in by_capture] == [3 * 30_000, 3 * 4_000]  # the kernels' durations, by hand
    assert by_capture[0]["pct_of_busy"] == round(100 * 90 / 102, 2)  # 3 x (30 + 4) us busy in all


def test_a_replay_with_another_count_of_kernels_is_refused_whole(tmp_path: Path) -> None:
    trace = _Trace()
    cursor = trace.capture(100, [MM, RELU])
    cursor = trace.replay(cursor, [MM[3], RELU[3]])
    trace.replay(cursor, [MM[3], RELU[3], RELU[3]])  # a graph captured before the window
    replays, by_capture, unmatched = _results(trace.dataset(tmp_path))
    assert [(r["graph_launches"], r["kernels"], r["kernels_matched"]) for r in replays] == [(2, 5, 2)]
    assert [(r["op"], r["kernels"]) for r in by_capture] == [("aten::mm", 1), ("aten::relu", 1)]
    assert [
        (
            r["op"],
            r["reason"],
            r["graph_launches"],
            r["kernels"],
            r["gpu_ns"],
            r["work_per_replay"],
            r["launches_per_capture"],
        )
        for r in unmatched
    ] == [("replay_step", "no capture with as many launches", 1, 3, 38_000, "3", "2")]


def test_without_a_capture_every_replay_says_so(tmp_path: Path) -> None:
    trace = _Trace()
    cursor = trace.eager(100, MM)
    trace.replay(cursor, [MM[3], RELU[3]])
    replays, by_capture, unmatched = _results(trace.dataset(tmp_path))
    assert replays[0]["capture_in_trace"] is False and replays[0]["kernels_matched"] == 0
    assert by_capture == []
    assert [(r["reason"], r["kernels"], r["launches_per_capture"]) for r in unmatched] == [
        ("no capture in the trace", 2, "")
    ]


def test_hip_launches_name_their_kernels_and_replays_may_start_branches_in_another_order(tmp_path: Path) -> None:
    trace = _Trace(runtime="hip")
    cursor = trace.capture(100, [MM, RELU, ADD], named=True)
    cursor = trace.replay(cursor, [MM[3], RELU[3], ADD[3]])
    cursor = trace.replay(cursor, [MM[3], ADD[3], RELU[3]])  # relu and add on parallel branches
    trace.replay(cursor, [MM[3], RELU[3], "some_other_kernel"])
    replays, by_capture, unmatched = _results(trace.dataset(tmp_path))
    assert replays[0]["kernels_matched"] == 6
    assert [(r["op"], r["matched_by"], r["graph_launches"], r["kernels"], r["gpu_ns"]) for r in by_capture] == [
        ("aten::mm", "order, order within kernel name", 2, 2, 60_000),
        ("aten::relu", "order, order within kernel name", 2, 2, 8_000),
        ("aten::add", "order, order within kernel name", 2, 2, 6_000),
    ]  # relu's 4 us kernel went to aten::relu wherever it ran in the replay
    assert [(r["reason"], r["kernels"]) for r in unmatched] == [
        ("kernels differ from every capture with as many launches", 3)
    ]


def test_two_captures_that_fit_one_replay_leave_it_unmatched(tmp_path: Path) -> None:
    trace = _Trace()
    cursor = trace.capture(100, [MM, RELU])
    cursor = trace.capture(cursor + 100, [ADD, RELU])  # same count; CUDA launches name no kernel
    trace.replay(cursor, [MM[3], RELU[3]])
    _, by_capture, unmatched = _results(trace.dataset(tmp_path))
    assert by_capture == []
    assert [(r["reason"], r["launches_per_capture"]) for r in unmatched] == [("several captures fit", "2, 2")]


def test_ops_named_as_their_kernels_tell_captures_of_one_size_apart(tmp_path: Path) -> None:
    """Inductor's launches run inside an op named as the kernel (``triton_poi_fused_...``)."""
    first = [("f", [], [], "triton_poi_fused_add_0"), ("f", [], [], "triton_red_fused_sum_1")]
    second = [("f", [], [], "triton_poi_fused_mul_2"), ("f", [], [], "triton_red_fused_sum_1")]
    trace = _Trace()
    cursor = trace.capture(100, first, op_named_as_kernel=True)
    cursor = trace.capture(cursor + 100, second, frame="model.py(30): backward", op_named_as_kernel=True)
    cursor = trace.replay(cursor, [k for *_, k in second], graph=2)
    trace.replay(cursor, [k for *_, k in first], graph=1)
    _, by_capture, unmatched = _results(trace.dataset(tmp_path))
    assert unmatched == []
    assert sorted((r["op"], r["frame"], r["kernels"]) for r in by_capture) == [
        ("triton_poi_fused_add_0", "forward (model.py:12)", 1),
        ("triton_poi_fused_mul_2", "backward (model.py:30)", 1),
        ("triton_red_fused_sum_1", "backward (model.py:30)", 1),
        ("triton_red_fused_sum_1", "forward (model.py:12)", 1),
    ]


def test_a_capture_recorded_in_a_trace_of_its_own_serves_the_replays_of_another(tmp_path: Path) -> None:
    # one process, two profiling windows (a graph lives in the process that captured it: the traces of
    # two processes of one rank are two runs, model.runs)
    capturing, replaying = _Trace(pid=1001), _Trace(pid=1001)
    capturing.capture(100, [MM, RELU])
    cursor = 1_000_000.0
    for _ in range(2):
        cursor = replaying.replay(cursor, [MM[3], RELU[3]])
    replays, by_capture, unmatched = _results(_dataset(tmp_path, capturing, replaying))
    assert replays[0]["kernels_matched"] == 4 and unmatched == []
    assert [(r["op"], r["input_dims"], r["graph_launches"]) for r in by_capture] == [
        ("aten::mm", "[[64,32],[32,16]]", 2),
        ("aten::relu", "[[64,16]]", 2),
    ]


def test_a_kernel_launch_never_meets_a_copy(tmp_path: Path) -> None:
    trace = _Trace()
    cursor = trace.capture(100, [COPY, MM])
    cursor = trace.replay(cursor, [COPY[3], MM[3]])
    trace.replay(cursor, [MM[3], COPY[3]])
    _, by_capture, unmatched = _results(trace.dataset(tmp_path))
    assert [(r["op"], r["kernels"]) for r in by_capture] == [("aten::mm", 1), ("aten::copy_", 1)]
    assert [(r["reason"], r["kernels"]) for r in unmatched] == [
        ("kernels differ from every capture with as many launches", 2)
    ]


def test_a_capture_counts_from_its_begin(tmp_path: Path) -> None:
    open_at_the_end = _Trace()
    open_at_the_end.replay(open_at_the_end.capture(100, [MM, RELU], ends=False), [MM[3], RELU[3]])
    replays, by_capture, _ = _results(open_at_the_end.dataset(tmp_path / "open"))
    assert replays[0]["kernels_matched"] == 2 and len(by_capture) == 2
    begun_before = _Trace()
    begun_before.call("StreamEndCapture", 100)  # the capture's Begin is before the window
    replays, _, unmatched = _results(begun_before.dataset(tmp_path / "before"))
    assert replays == [] and unmatched == []  # nothing replayed: no rows
    begun_before.replay(200, [MM[3], RELU[3]])
    replays, _, unmatched = _results(begun_before.dataset(tmp_path / "replayed"))
    assert replays[0]["capture_in_trace"] is False
    assert [r["reason"] for r in unmatched] == ["no capture in the trace"]


def test_the_kernels_an_op_ran_outside_graphs_check_its_captured_launch(tmp_path: Path) -> None:
    """CUDA launches name no kernel, but a warm-up before the capture ran the same ops on the same
    shapes: a replay whose kernels are not theirs is refused, not matched off by one."""
    trace = _Trace()
    cursor = trace.eager(trace.eager(100, MM), RELU)  # the warm-up torch.cuda.graph asks for
    cursor = trace.capture(cursor, [MM, RELU])
    cursor = trace.replay(cursor, [MM[3], RELU[3]])
    trace.replay(cursor, [RELU[3], MM[3]])
    _, by_capture, unmatched = _results(trace.dataset(tmp_path))
    assert [(r["op"], r["kernels"], r["gpu_ns"]) for r in by_capture] == [
        ("aten::mm", 1, 30_000),
        ("aten::relu", 1, 4_000),
    ]
    assert [(r["reason"], r["kernels"]) for r in unmatched] == [
        ("kernels differ from every capture with as many launches", 2)
    ]


def test_captures_of_the_same_ops_shapes_and_frame_count_as_one(tmp_path: Path) -> None:
    trace = _Trace()
    cursor = trace.capture(100, [MM, RELU])
    cursor = trace.capture(cursor + 100, [MM, RELU])  # captured again, from the same line
    trace.replay(cursor, [MM[3], RELU[3]])
    _, by_capture, unmatched = _results(trace.dataset(tmp_path))
    assert unmatched == []
    assert [(r["op"], r["input_dims"], r["kernels"]) for r in by_capture] == [
        ("aten::mm", "[[64,32],[32,16]]", 1),
        ("aten::relu", "[[64,16]]", 1),
    ]


def test_a_replay_on_several_streams_needs_launches_it_can_check(tmp_path: Path) -> None:
    """Parallel branches may start in another order than they were captured: with launches that
    name no kernel and no warm-up to check them against, such a replay is left unmatched."""
    unchecked = _Trace()
    unchecked.replay(unchecked.capture(100, [MM, RELU, ADD]), [MM[3], RELU[3], ADD[3]], streams=[7, 7, 9])
    _, by_capture, unmatched = _results(unchecked.dataset(tmp_path / "unchecked"))
    assert by_capture == []
    assert [(r["reason"], r["kernels"]) for r in unmatched] == [
        ("replayed on several streams by launches that name no kernel", 3)
    ]
    warmed = _Trace()
    cursor = warmed.eager(warmed.eager(warmed.eager(100, MM), RELU), ADD)
    warmed.replay(warmed.capture(cursor, [MM, RELU, ADD]), [MM[3], RELU[3], ADD[3]], streams=[7, 7, 9])
    _, by_capture, unmatched = _results(warmed.dataset(tmp_path / "warmed"))
    assert unmatched == [] and [r["op"] for r in by_capture] == ["aten::mm", "aten::relu", "aten::add"]


def test_each_replayed_kernel_points_at_its_capture_time_launch_and_op(tmp_path: Path) -> None:
    trace = _Trace()
    cursor = trace.capture(100, [MM, RELU])
    cursor = trace.replay(cursor, [MM[3], RELU[3]])
    trace.replay(cursor, [MM[3]])  # no capture of one launch
    tables = trace.dataset(tmp_path)
    rows = graph_kernels.replayed_work(tables).to_pylist()
    events = {e["id"]: e for e in tables["events"].select(["id", "name", "op_id", "launch_id"]).to_pylist()}
    assert [(events[r["id"]]["name"], r["capture_op"], r["matched_by"], r["reason"]) for r in rows] == [
        (MM[3], "aten::mm", "order", ""),
        (RELU[3], "aten::relu", "order", ""),
        (MM[3], "", "", "no capture with as many launches"),
    ]
    for row in rows[:2]:
        launch = events[row["capture_launch_id"]]
        assert launch["name"] == "cudaLaunchKernel" and launch["op_id"] == row["capture_op_id"]
        assert events[row["capture_op_id"]]["name"] == row["capture_op"]
        assert events[row["id"]]["launch_id"] == row["graph_launch_id"]
        assert row["stack_id"] >= 0 and row["input_dims"]
    assert (rows[2]["capture_launch_id"], rows[2]["capture_op_id"], rows[2]["stack_id"]) == (-1, -1, -1)


def test_a_trace_of_device_activity_only_matches_launches_without_ops(tmp_path: Path) -> None:
    """`activities=[ProfilerActivity.CUDA]` records runtime calls and kernels, no op: the replays
    still meet their capture, under no op, on prepared tables as the summary runs them."""
    trace = _Trace()
    trace.replay(trace.capture(100, [MM, RELU]), [MM[3], RELU[3]])
    trace.events = [e for e in trace.events if e["cat"] not in ("cpu_op", "python_function", "user_annotation")]
    tables = prepared(trace.dataset(tmp_path))
    replays, by_capture, unmatched = _results(tables)
    assert replays[0]["op"] == "(no launching op)" and replays[0]["kernels_matched"] == 2 and unmatched == []
    assert [(r["op"], r["input_dims"], r["kernels"]) for r in by_capture] == [("(no launching op)", "", 2)]

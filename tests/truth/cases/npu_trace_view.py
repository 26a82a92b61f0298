"""An NPU trace as torch_npu writes it (``ASCEND_PROFILER_OUTPUT/trace_view.json``): its device tasks,
on the "Ascend Hardware" process with no category, are placed on a device (its pid; the stream is
the thread, "Stream 2"), so summary shows the device's time and verify has nothing unplaced."""

from __future__ import annotations

import json
from pathlib import Path

from tests.truth.harness import Case

STEPS, TASKS = 2, 5
BASE_US = 1_760_000_000_000_000.0


def _meta(kind: str, pid: int, name: str, tid: int = 0) -> dict[str, object]:
    return {"ph": "M", "name": kind, "pid": pid, "tid": tid, "args": {"name": name}}


def events() -> list[dict[str, object]]:
    """torch_npu's shapes: a bare JSON list; ``ts`` as strings of µs; processes "Python" (the ops,
    ``cat`` cpu_op), "CANN" (AscendCL calls, no ``cat``) and "Ascend Hardware" (the NPU's tasks, no
    ``cat``, threads named "Stream N", args ``Task Type``, ``Stream Id``, ``Task Id``), and
    ``HostToDevice`` flows from a CANN call to its task."""
    out: list[dict[str, object]] = [
        *(_meta("process_name", 1, "Python"), _meta("thread_name", 1, "Thread 1", 1)),
        *(_meta("process_name", 2, "CANN"), _meta("thread_name", 2, "Thread 1", 1)),
        *(_meta("process_name", 3, "Ascend Hardware"), _meta("thread_name", 3, "Stream 2", 2)),
    ]
    for step in range(STEPS):
        start = BASE_US + step * 5_000
        out.append({"ph": "X", "name": f"ProfilerStep#{step}", "cat": "cpu_op", "pid": 1, "tid": 1,
                    "ts": f"{start:.3f}", "dur": 4_900, "args": {}})  # fmt: skip
        for task in range(TASKS):
            ts = start + 10 + task * 600
            flow = f"{step * TASKS + task}"
            out.append({"ph": "X", "name": "aten::mm", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": f"{ts:.3f}",
                        "dur": 40, "args": {}})  # fmt: skip
            out.append({"ph": "X", "name": "AscendCL@aclnnMatmul", "pid": 2, "tid": 1, "ts": f"{ts + 5:.3f}",
                        "dur": 20, "args": {}})  # fmt: skip
            out.append({"ph": "X", "name": "aclnnMatmul_MatMulV2_MatMulV2", "pid": 3, "tid": 2,
                        "ts": f"{ts + 100:.3f}", "dur": 400,
                        "args": {"Task Type": "AI_CORE", "Stream Id": 2, "Task Id": task}})  # fmt: skip
            out.append({"ph": "s", "name": "HostToDevice", "cat": "HostToDevice", "id": flow, "pid": 2, "tid": 1,
                        "ts": f"{ts + 5:.3f}"})  # fmt: skip
            out.append({"ph": "f", "name": "HostToDevice", "cat": "HostToDevice", "id": flow, "pid": 3, "tid": 2,
                        "ts": f"{ts + 100:.3f}", "bp": "e"})  # fmt: skip
    return out


def build(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "trace_view.json"
    path.write_text(json.dumps(events()))
    return path


# Hand count: STEPS x TASKS tasks of 400 µs, never overlapping, on one stream; the window runs from
# the first step's start to the last step's end (the host's ops lie inside the steps).
TASK_US, STEP_US = 400, 4_900
BUSY_NS = STEPS * TASKS * TASK_US * 1000
WALL_NS = ((STEPS - 1) * 5_000 + STEP_US) * 1000

CASE = Case(
    name="npu_trace_view",
    situation="torch_npu's trace_view.json: a bare list, string timestamps, device tasks on 'Ascend Hardware'",
    source="torch_npu's profiler output (ASCEND_PROFILER_OUTPUT/trace_view.json) as its analysis tools read it",
    truth="hand count",
    build=build,
    numbers={
        "summary:overview[rank=0].steps": STEPS,
        "summary:overview[rank=0].wall_ns": WALL_NS,
        "summary:overview[rank=0].device_busy_pct": 100 * BUSY_NS / WALL_NS,
        "summary:top_kernels[name=aclnnMatmul_MatMulV2_MatMulV2].calls": STEPS * TASKS,
        "summary:top_kernels[name=aclnnMatmul_MatMulV2_MatMulV2].total_ns": BUSY_NS,
        "summary:kernel_type_breakdown[rank=0,kernel_type=COMPUTATION].time_ns": BUSY_NS,
        "summary:temporal_breakdown[rank=0].compute_ns": BUSY_NS,
    },
    forbidden_problems=("device_work_unplaced", "no_device_activity"),
)

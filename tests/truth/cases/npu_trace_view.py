"""An NPU trace as torch_npu writes it (``ASCEND_PROFILER_OUTPUT/trace_view.json``): its device tasks
cannot be placed on a device yet, so verify counts them and says so instead of "ok"."""

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


CASE = Case(
    name="npu_trace_view",
    situation="torch_npu's trace_view.json: a bare list, string timestamps, device tasks on 'Ascend Hardware'",
    source="torch_npu's profiler output (ASCEND_PROFILER_OUTPUT/trace_view.json) as its analysis tools read it",
    truth="hand count",
    build=build,
    numbers={"summary:overview[rank=0].steps": STEPS},
    expected_problems=("device_work_unplaced",),
)

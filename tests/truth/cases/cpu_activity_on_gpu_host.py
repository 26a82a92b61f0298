"""A GPU host profiled with CPU activity only: launch calls with their flow starts, no kernel."""

from __future__ import annotations

from pathlib import Path

from tests.truth.harness import Case
from tests.truth.kineto import RankTrace

STEPS, LAUNCHES = 3, 150


def trace() -> RankTrace:
    """torch.profiler(activities=[ProfilerActivity.CPU]) on a CUDA host: the ops and their
    cudaLaunchKernel calls (the runtime callbacks are recorded with the CPU activity), each with
    the ``ac2g`` flow start Kineto writes for a launch, and no device event at all."""
    t = RankTrace(rank=0)
    corr = 1
    for step in range(STEPS):
        start = step * 10_000.0
        t.step(step, start, 9_000)
        for n in range(LAUNCHES):
            ts = start + 10 + n * 50
            ext = t.op("aten::addmm", ts, 40)
            t.x("cuda_runtime", "cudaLaunchKernel", ts + 5, 4.0, **{"External id": ext, "correlation": corr})
            t.events.append({"ph": "s", "id": corr, "pid": t.pid, "tid": t.main_tid, "ts": ts + 5,
                             "cat": "ac2g", "name": "ac2g"})  # fmt: skip
            corr += 1
        t.x("cuda_runtime", "cudaStreamSynchronize", start + 8_000, 500.0)
    return t


def build(folder: Path) -> Path:
    return trace().write(folder / "traces")


CALLS = STEPS * LAUNCHES
WHY = f"{CALLS} kernel launch call(s) but no device activity in the trace"

CASE = Case(
    name="cpu_activity_on_gpu_host",
    situation="a GPU host's trace recorded with CPU activity only: launches with flow starts, no kernel",
    source="libkineto's ac2g flow starts on cudaLaunchKernel (CPU activity), no CUPTI device activity",
    truth="hand count",
    build=build,
    numbers={
        "findings:findings[rule=gpu_idle_host_bound].cannot_judge": WHY,
        "findings:findings[rule=launch_bound].cannot_judge": WHY,
        "findings:findings[rule=sync_in_step].cannot_judge": WHY,
    },
    expected_problems=("no_device_activity",),
)

"""One rank whose window opens while device work launched before it still runs.

Kineto records the kernels that were still running (or queued) when the window opened, without
the ``cudaLaunchKernel`` calls that launched them. They count as device time the trace holds;
``overview`` counts them apart, and ``verify`` notes them (a note, not a problem).
"""

from __future__ import annotations

from pathlib import Path

from tests.truth.harness import Case
from tests.truth.kineto import RankTrace

BEFORE = [("sm90_gemm_before", 0.0, 150.0), ("elementwise_before", 152.0, 40.0)]  # (name, start, dur) µs
STEPS = 2


def trace() -> RankTrace:
    t = RankTrace(rank=0)
    for i, (name, start, dur) in enumerate(BEFORE):
        t.device_work(name, start, dur, correlation=50_000 + i)  # its launch ran before the window
    for step in range(STEPS):
        start = 100.0 + step * 1000.0
        t.step(step, start, 900.0)
        mm = t.op("aten::mm", start + 10.0, 40.0)
        t.launch(mm, start + 20.0, "sm90_gemm", max(start + 30.0, 200.0), 300.0)
    return t


def build(folder: Path) -> Path:
    return trace().write(folder)


def _work(t: RankTrace) -> tuple[int, int]:
    """(device executions, device ns) of all device work, by hand."""
    kernels = t.kernels()
    return len(kernels), round(sum(k["dur"] for k in kernels) * 1000)


_ALL = _work(trace())

CASE = Case(
    name="launched_before_window",
    situation="device work launched before the profiling window opened, still running when it opened",
    source="libkineto's CUPTI activity records of kernels whose runtime call preceded the trace start",
    truth="hand count",
    build=build,
    numbers={
        "summary:overview[rank=0].launched_before_events": len(BEFORE),
        "summary:overview[rank=0].launched_before_ns": round(sum(d for _, _, d in BEFORE) * 1000),
        "summary:kernel_launches[rank=0].ops": _ALL[0],
        "summary:kernel_launches[rank=0].launched": _ALL[0] - len(BEFORE),
        "verify:findings.count(check=launched_before_window)": 1,
    },
    forbidden_problems=("launched_before_window",),
)

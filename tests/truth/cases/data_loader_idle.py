"""A device idle while the host thread hands out a DataLoader batch, with the next kernel already
queued (its launch came before the batch): that idle is host wait (data loading), not launch
latency or other."""

from __future__ import annotations

from pathlib import Path

from tests.truth.harness import Case
from tests.truth.kineto import RankTrace

STEPS = 4
STEP_US = 10_000.0
LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"  # as torch names it
LOAD_START_US, LOAD_US = 40.0, 5_000.0  # from the step's start
A_LAUNCH_US, A_START_US, A_US = 10.0, 20.0, 1_000.0  # kernel A: launched, started, long
B_LAUNCH_US, B_START_US, B_US = 30.0, 5_050.0, 950.0  # kernel B: launched before the batch, starts after it
LATENCY_MAX_US = 30.0  # the idle analysis's default launch_latency_max_ns


def trace() -> RankTrace:
    t = RankTrace(rank=0)
    for step in range(STEPS):
        start = step * STEP_US
        t.step(step, start, STEP_US - 1_000)
        t.op(LOADER, start + LOAD_START_US, LOAD_US, cat="user_annotation")
        for corr, (launch, begin, dur) in enumerate(((A_LAUNCH_US, A_START_US, A_US),
                                                      (B_LAUNCH_US, B_START_US, B_US))):
            ext = t.op("aten::mm", start + launch - 2, 8.0)
            correlation = 1_000 + 10 * step + corr
            t.x("cuda_runtime", "cudaLaunchKernel", start + launch, 5.0, **{"External id": ext,
                                                                            "correlation": correlation})
            t.device_work("gemm_kernel", start + begin, dur, correlation=correlation, ext=ext)
    return t


def build(folder: Path) -> Path:
    return trace().write(folder / "traces")


# Hand count, per the split of a gap in analysis/device/gaps.py. In a step, the gap from A's end
# (1,020 us) to B's start (5,050 us) comes after B's launch: before the batch ends (5,040 us) the
# host is handing out the batch, 4,020 us of host wait; the 10 us after it are launch latency. Between
# steps, the gap from B's end (6,000 us) to the next A (+10,020 us) is host wait until A's launch call
# (+10,010 us: 4,010 us), then 10 us of launch latency. Nothing is other; nothing is sync.
IN_STEP_HOST_US = LOAD_START_US + LOAD_US - (A_START_US + A_US)
IN_STEP_LATENCY_US = B_START_US - (LOAD_START_US + LOAD_US)
BETWEEN_HOST_US = STEP_US + A_LAUNCH_US - (B_START_US + B_US)
BETWEEN_LATENCY_US = A_START_US - A_LAUNCH_US
assert IN_STEP_LATENCY_US <= LATENCY_MAX_US and BETWEEN_LATENCY_US <= LATENCY_MAX_US


def _ns(us: float) -> int:
    return round(us * 1000)


CASE = Case(
    name="data_loader_idle",
    situation="device idle while the host hands out a DataLoader batch, the next kernel already queued",
    source="torch's DataLoader annotation (enumerate(DataLoader)#...__next__) and CUPTI kernels",
    truth="hand count",
    build=build,
    numbers={
        "summary:idle_time[rank=0,stream=-1].host_wait_ns": _ns(STEPS * IN_STEP_HOST_US
                                                                   + (STEPS - 1) * BETWEEN_HOST_US),
        "summary:idle_time[rank=0,stream=-1].launch_latency_ns": _ns(STEPS * IN_STEP_LATENCY_US
                                                                        + (STEPS - 1) * BETWEEN_LATENCY_US),
        "summary:idle_time[rank=0,stream=-1].other_ns": 0,
        "summary:idle_time[rank=0,stream=-1].sync_ns": 0,
    },
    expected_findings=(),
    forbidden_findings=("sync_in_step",),
)

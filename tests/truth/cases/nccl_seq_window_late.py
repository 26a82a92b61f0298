"""Four ranks with process group and ``Seq`` on their NCCL kernels; rank 2's window opens late.

The other ranks' traces begin with an all-reduce kernel launched before their windows: Kineto
has no ``record_param_comms`` to copy metadata from, so that kernel is bare. The instances
recorded with ``Seq`` pair by it; the bare one pairs among the three ranks that hold it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.truth.harness import Case
from tests.truth.kineto import COMM_STREAM, RankTrace, nccl_allreduce, write_traces

RANKS, STEPS = 4, 4
LATE_RANK = 2
FIRST_SEQ = 17  # the group's collectives before the window are numbered too
KERNEL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
PRE = {0: (10.0, 400.0), 1: (40.0, 400.0), 3: (25.0, 400.0)}  # the bare pre-window kernel: (start, end)
STEP_US = 5000.0
ARRIVE_US = {0: 3000.0, 1: 3120.0, 2: 3050.0, 3: 3010.0}  # rank 1 arrives last
KERNEL_US = 250.0


def times(step: int) -> dict[int, tuple[float, float]]:
    start = 1000.0 + step * STEP_US
    end = start + max(ARRIVE_US.values()) + KERNEL_US
    return {r: (start + ARRIVE_US[r], end) for r in range(RANKS)}


def traces() -> list[RankTrace]:
    out = []
    for rank in range(RANKS):
        t = RankTrace(rank=rank, world_size=RANKS, host="node-a")
        t.op("aten::empty", 0.0 if rank != LATE_RANK else 700.0, 2.0)
        if rank in PRE:
            begin, end = PRE[rank]
            t.device_work(KERNEL, begin, end - begin, stream=COMM_STREAM, correlation=77_000)
        for step in range(STEPS):
            start = 1000.0 + step * STEP_US
            t.step(step, start, STEP_US - 100.0)
            mm = t.op("aten::mm", start + 5.0, 40.0)
            t.launch(mm, start + 10.0, "sm90_gemm", start + 20.0, ARRIVE_US[rank] - 40.0)
            begin, end = times(step)[rank]
            nccl_allreduce(t, start + 60.0, begin, end - begin, seq=FIRST_SEQ + 1 + step)
        out.append(t)
    return out


def build(folder: Path) -> Path:
    return write_traces(folder, traces())


def hand_count() -> dict[str, Any]:
    """Per instance (the STEPS ones and the bare one): each rank's wait is its duration minus the
    shortest; the rank that started last arrived last."""
    waits = dict.fromkeys(range(RANKS), 0)
    last = dict.fromkeys(range(RANKS), 0)
    for instance in [times(step) for step in range(STEPS)] + [PRE]:
        d = {r: round((e - b) * 1000) for r, (b, e) in instance.items()}
        for r, duration in d.items():
            waits[r] += duration - min(d.values())
        last[max(instance, key=lambda r: instance[r][0])] += 1
    pre = {r: round((e - b) * 1000) for r, (b, e) in PRE.items()}
    return {"wait_ns": waits, "last": last, "pre_latency_ns": min(pre.values())}


_COUNT = hand_count()

CASE = Case(
    name="nccl_seq_window_late",
    situation="4 ranks, process group and Seq on the NCCL kernels; one rank's window opens after a "
    "collective the others hold, launched before their windows (bare: no metadata)",
    source="torch >= 2.2 ParamCommsUtils Seq and Process Group Name copied by libkineto onto NCCL kernels; "
    "libkineto keeps device work running when the window opens, without its launch",
    truth="hand count",
    build=build,
    numbers={
        "summary:matched_collectives{matched_by=seq}.#": STEPS,
        "summary:matched_collectives{matched_by=seq}.values(number)": [FIRST_SEQ + 1 + s for s in range(STEPS)],
        "summary:matched_collectives{matched_by=seq}.max(end_spread_ns)": 0,
        "summary:matched_collectives{matched_by=seq}.values(last_rank)": [1] * STEPS,
        "summary:matched_collectives[matched_by=order].ranks": 3,
        "summary:matched_collectives[matched_by=order].latency_ns": _COUNT["pre_latency_ns"],
        "summary:matched_collectives[matched_by=order].end_spread_ns": 0,
        "summary:collective_waits[rank=0].wait_ns": _COUNT["wait_ns"][0],
        "summary:collective_waits[rank=2].wait_ns": _COUNT["wait_ns"][2],
        "summary:collective_waits[rank=1].arrived_last": _COUNT["last"][1],
        "summary:collective_waits[rank=0].arrived_last": _COUNT["last"][0],
        "summary:overview[rank=3].launched_before_events": 1,
        "summary:overview[rank=2].launched_before_events": 0,
        "verify:findings.count(check=clock_skew)": 0,
    },
    forbidden_problems=("clock_skew",),
)

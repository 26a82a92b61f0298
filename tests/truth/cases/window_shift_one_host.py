"""Four ranks of one host; rank 2's window opens after a collective the other ranks still hold.

The other ranks launched that all-reduce before their windows opened: their traces hold its
kernel (Kineto records device work still running when the window opens) without its launch or
its ``record_param_comms``; rank 2's window opened after it ended. The kernels carry no
collective metadata (as in traces of torch before the process group and ``Seq`` were copied
onto them), so only their order can pair them: by plain order, rank 2's first all-reduce is
paired with the others' pre-window one, and every later one is shifted by one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.truth.harness import Between, Case
from tests.truth.kineto import COMM_STREAM, RankTrace, write_traces

RANKS, STEPS = 4, 3
LATE_WINDOW_RANK = 2
STEP_US, FIRST_STEP_US = 8000.0, 300.0
# the all-reduce launched before the windows: start on each rank, one end for all
PRE_START_US = {0: 20.0, 1: 25.0, 2: 30.0, 3: 90.0}
PRE_END_US = 190.0
WINDOW_US = {0: 0.0, 1: 0.0, 2: 250.0, 3: 0.0}  # when each rank's window opens
LATE_US = {0: 0.0, 1: 15.0, 2: 5.0, 3: 60.0}  # rank 3 arrives last at every all-reduce
KERNEL_US = 100.0  # the last rank's kernel: the collective's own time
KERNEL = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"


def allreduce_times(step: int) -> dict[int, tuple[float, float]]:
    """rank -> (kernel start, kernel end) of the step's all-reduce: each starts when its rank
    arrives, all end KERNEL_US after the last arrival."""
    base = FIRST_STEP_US + step * STEP_US + 6500.0  # the step's compute runs long before it
    end = base + max(LATE_US.values()) + KERNEL_US
    return {rank: (base + LATE_US[rank], end) for rank in range(RANKS)}


def instances() -> list[dict[int, tuple[float, float]]]:
    """rank -> (kernel start, kernel end) of each instance: the pre-window one (the ranks whose
    window opened while it ran) and the STEPS ones (all ranks)."""
    found = [{r: (PRE_START_US[r], PRE_END_US) for r in range(RANKS) if WINDOW_US[r] == 0.0}]
    return found + [allreduce_times(step) for step in range(STEPS)]


def traces() -> list[RankTrace]:
    out = []
    for rank in range(RANKS):
        t = RankTrace(rank=rank, world_size=RANKS, host="node-a")
        t.op("aten::empty", WINDOW_US[rank], 5.0)  # the window's first host event
        if WINDOW_US[rank] == 0.0:  # still running when this rank's window opened; launch not in the trace
            t.device_work(KERNEL, PRE_START_US[rank], PRE_END_US - PRE_START_US[rank], stream=COMM_STREAM,
                          correlation=900_000)
        for step in range(STEPS):
            start = FIRST_STEP_US + step * STEP_US
            t.step(10 + step, start, STEP_US - 50)
            mm = t.op("aten::mm", start + 10, 60)
            t.launch(mm, start + 20, "sm90_gemm_bf16", start + 40, 300 + LATE_US[rank])
            begin, end = allreduce_times(step)[rank]
            outer = t.op("c10d::allreduce_", start + 100, 30)
            t.op("record_param_comms", start + 102, 26)
            del outer
            inner = t.op("nccl:all_reduce", start + 104, 20, cat="user_annotation")
            t.launch(inner, start + 108, KERNEL, begin, end - begin, stream=COMM_STREAM)
        out.append(t)
    return out


def build(folder: Path) -> Path:
    return write_traces(folder, traces())


def hand_count() -> dict[str, Any]:
    """Per rank: its wait (duration minus the instance's shortest) summed over the instances it is
    in, and how often it arrived last; the instances are the pre-window one (ranks 0, 1, 3) and
    the STEPS ones (all ranks)."""
    wait_us = dict.fromkeys(range(RANKS), 0.0)
    last = dict.fromkeys(range(RANKS), 0)
    for instance in instances():
        shortest = min(end - begin for begin, end in instance.values())
        for rank, (begin, end) in instance.items():
            wait_us[rank] += (end - begin) - shortest
        last[max(instance, key=lambda r: instance[r][0])] += 1
    return {"wait_ns": {r: round(w * 1000) for r, w in wait_us.items()}, "last": last, "instances": len(instances())}


_COUNT = hand_count()

CASE = Case(
    name="window_shift_one_host",
    situation="4 ranks of one host; one rank's window opens after an all-reduce the others still hold, "
    "launched before their windows; kernels without collective metadata",
    source="libkineto records device work still running when the window opens (no launch, no External id); "
    "NCCL kernels ncclDevKernel_AllReduce_*; torch's c10d::allreduce_ > record_param_comms > nccl:all_reduce",
    truth="hand count",
    build=build,
    numbers={
        "summary:matched_collectives.#": _COUNT["instances"],
        "summary:matched_collectives.max(end_spread_ns)": Between(0, 200_000),
        "summary:matched_collectives{ranks=4}.max(end_spread_ns)": 0,
        "summary:matched_collectives{ranks=4}.#": STEPS,
        "summary:matched_collectives{ranks=4}.values(last_rank)": [3] * STEPS,
        "summary:matched_collectives{ranks=4}.max(latency_ns)": round(KERNEL_US * 1000),
        "summary:collective_waits[rank=0].wait_ns": _COUNT["wait_ns"][0],
        "summary:collective_waits[rank=2].wait_ns": _COUNT["wait_ns"][2],
        "summary:collective_waits[rank=3].wait_ns": _COUNT["wait_ns"][3],
        "summary:collective_waits[rank=3].arrived_last": _COUNT["last"][3],
        "summary:collective_waits[rank=2].arrived_last": _COUNT["last"][2],
        "summary:clock_offsets.max(uncertainty_ns)": Between(0, 200_000),
        "summary:overview[rank=0].launched_before_events": 1,
        "summary:overview[rank=2].launched_before_events": 0,
        "verify:findings.count(check=clock_skew)": 0,
        "verify:findings.count(check=clock_agreement)": 1,
    },
    forbidden_problems=("clock_skew",),
)

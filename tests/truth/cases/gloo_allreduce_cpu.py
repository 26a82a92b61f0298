"""Four CPU ranks all-reduce on gloo; rank 1 computes longer and the others wait for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.truth.harness import Case
from tests.truth.kineto import RankTrace, gloo_allreduce, write_traces

RANKS, STEPS = 4, 3
COMPUTE_US = {0: 4000.0, 1: 7000.0, 2: 4200.0, 3: 4100.0}  # rank 1 is the straggler
REDUCE_US = 1500.0  # the collective's own time, after the last rank enters
STEP_GAP_US = 500.0


def times(step: int) -> dict[int, tuple[float, float]]:
    """rank -> (gloo:all_reduce start, its end) in the step: all leave together."""
    start = step * (max(COMPUTE_US.values()) + REDUCE_US + STEP_GAP_US + 100.0)
    end = start + 10.0 + max(COMPUTE_US.values()) + REDUCE_US
    return {rank: (start + 10.0 + COMPUTE_US[rank], end) for rank in range(RANKS)}


def step_start(step: int) -> float:
    return step * (max(COMPUTE_US.values()) + REDUCE_US + STEP_GAP_US + 100.0)


def traces() -> list[RankTrace]:
    out = []
    for rank in range(RANKS):
        t = RankTrace(rank=rank, world_size=RANKS, backend="gloo", device=None, host="cpu-node")
        for step in range(STEPS):
            start = step_start(step)
            begin, end = times(step)[rank]
            t.step(step, start, end - start + 20.0)
            t.op("aten::mm", start + 5.0, COMPUTE_US[rank])
            gloo_allreduce(t, begin + 4.0, end - begin - 4.0)
        out.append(t)
    return out


def build(folder: Path) -> Path:
    return write_traces(folder, traces())


def hand_count() -> dict[str, Any]:
    """Per instance: the shortest annotation (the last rank's) is the latency; each rank waits its
    duration minus that."""
    wait = dict.fromkeys(range(RANKS), 0)
    latency = []
    for step in range(STEPS):
        durations = {r: round((e - b - 4.0) * 1000) for r, (b, e) in times(step).items()}
        shortest = min(durations.values())
        latency.append(shortest)
        for r, d in durations.items():
            wait[r] += d - shortest
    return {"wait_ns": wait, "latency_ns": latency}


_COUNT = hand_count()

CASE = Case(
    name="gloo_allreduce_cpu",
    situation="four CPU ranks of one host all-reduce on gloo (record_param_comms > gloo:all_reduce); "
    "one rank computes longer",
    source="torch's ProcessGroupGloo record_function gloo:all_reduce (user_annotation, as in HTA's "
    "tests/data/cpu_only trace) under record_param_comms with ParamCommsUtils args",
    truth="hand count",
    build=build,
    numbers={
        "summary:matched_collectives.#": STEPS,
        "summary:matched_collectives.values(last_rank)": [1] * STEPS,
        "summary:matched_collectives.values(latency_ns)": _COUNT["latency_ns"],
        "summary:matched_collectives.max(end_spread_ns)": 0,
        "summary:collective_waits[rank=0].wait_ns": _COUNT["wait_ns"][0],
        "summary:collective_waits[rank=1].wait_ns": 0,
        "summary:collective_waits[rank=3].wait_ns": _COUNT["wait_ns"][3],
        "summary:collective_waits[rank=1].arrived_last": STEPS,
        "findings:findings[rule=straggler].rank": 1,
        "verify:findings.count(check=clock_skew)": 0,
    },
    expected_findings=("straggler", "gloo_wait"),
    forbidden_findings=("gpu_idle_host_bound", "sync_in_step"),
    forbidden_problems=("clock_skew",),
)

"""Gloo on four CPU ranks; rank 3's window opens after the first all-reduce the others recorded.

The others' windows hold an all-reduce before their first ``ProfilerStep#N`` (a barrier-like
sync after set-up); rank 3's window opened after it. By plain order every later all-reduce of
rank 3 would pair with the others' previous one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.truth.harness import Between, Case
from tests.truth.kineto import RankTrace, gloo_allreduce, write_traces

RANKS = 4
LATE_RANK = 3
FIRST = (100.0, 900.0)  # the all-reduce before the steps: (start, end) on ranks 0-2
STEP_US = (9000.0, 12500.0, 8000.0, 11000.0)  # steps of uneven length (data-dependent work)
ARRIVE_US = {0: 3000.0, 1: 3300.0, 2: 3100.0, 3: 5200.0}  # into each step; rank 3 is last
REDUCE_US = 800.0


def step_start(step: int) -> float:
    return 2000.0 + sum(STEP_US[:step])


def times(step: int) -> dict[int, tuple[float, float]]:
    start = step_start(step)
    end = start + max(ARRIVE_US.values()) + REDUCE_US
    return {rank: (start + ARRIVE_US[rank], end) for rank in range(RANKS)}


def traces() -> list[RankTrace]:
    out = []
    for rank in range(RANKS):
        t = RankTrace(rank=rank, world_size=RANKS, backend="gloo", device=None, host="cpu-node")
        if rank != LATE_RANK:
            t.op("aten::empty", 0.0, 5.0)
            gloo_allreduce(t, FIRST[0], FIRST[1] - FIRST[0])
        else:
            t.op("aten::empty", 1500.0, 5.0)  # its window opens here
        for step in range(len(STEP_US)):
            start = step_start(step)
            begin, end = times(step)[rank]
            t.step(20 + step, start, STEP_US[step] - 100.0)
            t.op("aten::bmm", start + 10.0, ARRIVE_US[rank] - 50.0)
            gloo_allreduce(t, begin, end - begin)
        out.append(t)
    return out


def build(folder: Path) -> Path:
    return write_traces(folder, traces())


def hand_count() -> dict[str, Any]:
    wait = dict.fromkeys(range(RANKS), 0)
    for step in range(len(STEP_US)):
        durations = {r: round((e - b) * 1000) for r, (b, e) in times(step).items()}
        for r, d in durations.items():
            wait[r] += d - min(durations.values())
    return {"wait_ns": wait}


_COUNT = hand_count()

CASE = Case(
    name="gloo_window_shift",
    situation="gloo on four CPU ranks of one host; one rank's window opens after an all-reduce the others "
    "recorded; steps of uneven length",
    source="torch's ProcessGroupGloo gloo:all_reduce under record_param_comms; torch.profiler windows "
    "opened by each rank's own schedule",
    truth="hand count",
    build=build,
    numbers={
        "summary:matched_collectives{ranks=4}.#": len(STEP_US),
        "summary:matched_collectives{ranks=3}.#": 1,
        "summary:matched_collectives.max(end_spread_ns)": Between(0, 200_000),
        "summary:matched_collectives{ranks=4}.values(last_rank)": [LATE_RANK] * len(STEP_US),
        "summary:collective_waits[rank=0].wait_ns": _COUNT["wait_ns"][0],
        "summary:collective_waits[rank=3].wait_ns": _COUNT["wait_ns"][3],
        "summary:collective_waits[rank=3].arrived_last": len(STEP_US),
        "findings:findings[rule=straggler].rank": LATE_RANK,
    },
    expected_findings=("straggler",),
    forbidden_problems=("clock_skew",),
)

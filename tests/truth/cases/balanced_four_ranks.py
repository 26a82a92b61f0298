"""Four balanced ranks of one host (no ``Seq``): nobody holds the others back.

Every rank arrives at each all-reduce within 2 µs of the others: no rank is a straggler, no
clock is off, and the waits are those microseconds.
"""

from __future__ import annotations

from pathlib import Path

from tests.truth.harness import Case
from tests.truth.kineto import RankTrace, nccl_allreduce, write_traces

RANKS, STEPS = 4, 5
STEP_US = (3000.0, 3400.0, 2900.0, 3600.0, 3100.0)
ARRIVE_US = {0: 1500.0, 1: 1501.0, 2: 1502.0, 3: 1500.5}
OWN_US = 400.0


def step_start(step: int) -> float:
    return 500.0 + sum(STEP_US[:step])


def traces() -> list[RankTrace]:
    out = []
    for rank in range(RANKS):
        t = RankTrace(rank=rank, world_size=RANKS, host="node-a")
        for step in range(STEPS):
            start = step_start(step)
            t.step(step, start, STEP_US[step] - 100.0)
            mm = t.op("aten::mm", start + 5.0, 30.0)
            t.launch(mm, start + 10.0, "sm90_gemm", start + 20.0, ARRIVE_US[rank] - 30.0)
            begin, end = start + ARRIVE_US[rank], start + max(ARRIVE_US.values()) + OWN_US
            nccl_allreduce(t, start + 40.0, begin, end - begin)
        out.append(t)
    return out


def build(folder: Path) -> Path:
    return write_traces(folder, traces())


def _wait_ns(rank: int) -> int:
    return STEPS * round((max(ARRIVE_US.values()) - ARRIVE_US[rank]) * 1000)


CASE = Case(
    name="balanced_four_ranks",
    situation="four balanced ranks of one host (arrivals within 2 µs), no Seq",
    source="NCCL all-reduce kernels with Process Group Name and no Seq (torch before 2.2)",
    truth="hand count",
    build=build,
    numbers={
        "summary:matched_collectives.#": STEPS,
        "summary:matched_collectives.max(end_spread_ns)": 0,
        "summary:matched_collectives.max(max_skew_ns)": round((max(ARRIVE_US.values()) - 1500.0) * 1000),
        "summary:collective_waits[rank=0].wait_ns": _wait_ns(0),
        "summary:collective_waits[rank=3].wait_ns": _wait_ns(3),
        "summary:collective_waits[rank=2].arrived_last": STEPS,
        "verify:findings.count(check=clock_agreement)": 1,
    },
    forbidden_findings=("straggler",),
    forbidden_problems=("clock_skew",),
)

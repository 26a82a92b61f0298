"""A broadcast on four ranks of one host, whose kernels end one after the other down the ring.

In NCCL's ring broadcast the root's kernel ends when it has sent the last chunk, each later rank's
when it has received (and forwarded) it: the ends are staggered by the ring position, not by the
clocks. Only collectives whose ranks finish together (all-reduce, all-gather, reduce-scatter,
all-to-all, barrier) compare clocks; a broadcast must not raise ``clock_skew``.
"""

from __future__ import annotations

from pathlib import Path

from tests.truth.harness import Case
from tests.truth.kineto import RankTrace, nccl_collective, write_traces

RANKS, STEPS = 4, 4
STEP_US = (9000.0, 9700.0, 8800.0, 9300.0)
START_US = 1000.0  # every rank enters together
RING_US = 3000.0  # each rank down the ring ends this much after the previous one
KERNEL = "ncclDevKernel_Broadcast_RING_LL"


def step_start(step: int) -> float:
    return 500.0 + sum(STEP_US[:step])


def traces() -> list[RankTrace]:
    out = []
    for rank in range(RANKS):
        t = RankTrace(rank=rank, world_size=RANKS, host="node-a")
        for step in range(STEPS):
            start = step_start(step)
            t.step(step, start, STEP_US[step] - 100.0)
            begin, dur = start + START_US, 500.0 + rank * RING_US
            nccl_collective(t, begin - 40.0, begin, dur, collective="broadcast", kernel=KERNEL, seq=step,
                            nelems=1 << 26)
        out.append(t)
    return out


def build(folder: Path) -> Path:
    return write_traces(folder, traces())


CASE = Case(
    name="broadcast_ring_ends",
    situation="NCCL ring broadcast on four ranks of one host: kernel ends staggered by ring position",
    source="NCCL's ring broadcast (root sends, each rank forwards); torch's ParamCommsUtils args with Seq on "
    "the kernels",
    truth="hand count",
    build=build,
    numbers={
        "summary:matched_collectives.#": STEPS,
        "summary:matched_collectives.values(matched_by)": ["seq"] * STEPS,
        "summary:matched_collectives.max(end_spread_ns)": round((RANKS - 1) * RING_US * 1000),
        "summary:matched_collectives.max(latency_ns)": 500_000,
        "verify:findings.count(check=clock_skew)": 0,
        "verify:findings.count(check=clock_unchecked)": 1,
    },
    forbidden_problems=("clock_skew",),
)

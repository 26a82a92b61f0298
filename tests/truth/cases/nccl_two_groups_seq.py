"""Two process groups on two ranks, each numbering its own collectives with ``Seq``.

A data-parallel group ("0") all-reduces gradients once a step; a tensor-parallel group ("1")
all-gathers twice a step. Rank 1's window opens after the tensor-parallel group's first
all-gather of the others' window. Each group's ``Seq`` counts on its own, so the same number in
two groups is two instances.
"""

from __future__ import annotations

from pathlib import Path

from tests.truth.harness import Case
from tests.truth.kineto import RankTrace, nccl_collective, write_traces

RANKS, STEPS = 2, 3
STEP_US = 4000.0
GATHER = "ncclDevKernel_AllGather_RING_LL"
REDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
LATE_US = {0: 0.0, 1: 30.0}  # rank 1 arrives 30 µs later at everything
OWN_US = {"allgather": 80.0, "allreduce": 200.0}
# (collective, group, kernel, at µs into the step); seq per group counts from these
PLAN = [("allgather", "1", GATHER, 500.0), ("allgather", "1", GATHER, 1500.0), ("allreduce", "0", REDUCE, 3000.0)]
FIRST_SEQ = {"0": 40, "1": 80}


def instances() -> list[tuple[str, str, str, int, float]]:
    """(collective, group, kernel, seq, kernel start on rank 0) of every instance, in time order."""
    seq = dict(FIRST_SEQ)
    out = []
    for step in range(STEPS):
        for collective, group, kernel, at in PLAN:
            out.append((collective, group, kernel, seq[group], 200.0 + step * STEP_US + at))
            seq[group] += 1
    return out


def traces() -> list[RankTrace]:
    out = []
    for rank in range(RANKS):
        t = RankTrace(rank=rank, world_size=RANKS, host="node-a")
        for number, (collective, group, kernel, seq, start) in enumerate(instances()):
            if rank == 1 and number == 0:
                continue  # rank 1's window opened after it
            if number % len(PLAN) == 0:
                step = number // len(PLAN)
                t.step(step, 200.0 + step * STEP_US - 100.0, STEP_US - 200.0)
            begin = start + LATE_US[rank]
            end = start + max(LATE_US.values()) + OWN_US[collective]
            nccl_collective(t, begin - 60.0, begin, end - begin, collective=collective, kernel=kernel, group=group,
                            seq=seq, nelems=1 << 22 if group == "1" else 1 << 24)
        out.append(t)
    return out


def build(folder: Path) -> Path:
    return write_traces(folder, traces())


_ON_BOTH = len(instances()) - 1
_GATHERS = sum(1 for c, *_ in instances() if c == "allgather") - 1

CASE = Case(
    name="nccl_two_groups_seq",
    situation="tensor- and data-parallel process groups on two ranks, each with its own Seq; one rank's window "
    "opens after the first all-gather",
    source="torch's ParamCommsUtils (Process Group Name, Seq per process group) copied by libkineto onto the "
    "NCCL kernels",
    truth="hand count",
    build=build,
    numbers={
        "summary:matched_collectives.#": _ON_BOTH,
        "summary:matched_collectives.count(matched_by=seq)": _ON_BOTH,
        "summary:matched_collectives{group=1}.#": _GATHERS,
        "summary:matched_collectives{group=1}.values(number)": sorted(
            s for c, g, _, s, _ in instances()[1:] if g == "1"
        ),
        "summary:matched_collectives{group=0}.values(number)": [FIRST_SEQ["0"] + s for s in range(STEPS)],
        "summary:matched_collectives.max(end_spread_ns)": 0,
        "summary:matched_collectives{group=1}.max(latency_ns)": round(OWN_US["allgather"] * 1000),
        "summary:matched_collectives{group=0}.max(latency_ns)": round(OWN_US["allreduce"] * 1000),
        "summary:collective_waits[rank=0].wait_ns": round(_ON_BOTH * LATE_US[1] * 1000),
        "summary:collective_waits[rank=1].arrived_last": _ON_BOTH,
    },
    forbidden_problems=("clock_skew",),
)

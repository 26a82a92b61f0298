"""Two ranks of one host all-reduce on NCCL with ``Seq`` and ``Process Group Name`` recorded."""

from __future__ import annotations

from pathlib import Path

from tests.truth.harness import Case
from tests.truth.kineto import RankTrace, nccl_allreduce, write_traces

RANKS, STEPS = 2, 4
# rank -> µs it arrives later than rank 0 at each all-reduce's kernel (its compute took longer)
LATE_US = {0: 0.0, 1: 40.0}
KERNEL_US = 100.0  # the collective's own time: the kernel of the last rank to arrive
NELEMS = 1 << 20


def traces() -> list[RankTrace]:
    out = []
    for rank in range(RANKS):
        t = RankTrace(rank=rank, world_size=RANKS)
        for step in range(STEPS):
            start = step * 1000.0
            t.step(step, start, 900.0)
            ext = t.op("aten::mm", start + 10, 50)
            t.launch(ext, start + 20, "sm90_gemm", start + 30, 200 + LATE_US[rank])
            arrive = start + 240 + LATE_US[rank]
            # every rank's kernel ends together: the last one to arrive runs KERNEL_US
            end = start + 240 + max(LATE_US.values()) + KERNEL_US
            nccl_allreduce(t, start + 100, arrive, end - arrive, seq=step, nelems=NELEMS)
        out.append(t)
    return out


def build(folder: Path) -> Path:
    return write_traces(folder, traces())


CASE = Case(
    name="nccl_allreduce_seq",
    situation="NCCL all-reduce on two ranks of one host, process group and Seq recorded on the kernels",
    source="torch's ParamCommsUtils args on record_param_comms, copied by libkineto onto the NCCL kernel",
    truth="hand count",
    build=build,
    numbers={
        "summary:matched_collectives.#": STEPS,
        "summary:matched_collectives.count(matched_by=seq)": STEPS,
        "summary:matched_collectives[number=2].latency_ns": round(KERNEL_US * 1000),
        "summary:matched_collectives[number=2].last_rank": 1,
        "summary:matched_collectives[number=2].max_skew_ns": round(LATE_US[1] * 1000),
        "summary:matched_collectives[number=2].wait_ns": round(LATE_US[1] * 1000),
        "summary:matched_collectives[number=2].size_bytes": NELEMS * 4,
        "summary:matched_collectives.max(end_spread_ns)": 0,
        "summary:collective_waits[rank=0].wait_ns": round(STEPS * LATE_US[1] * 1000),
        "summary:collective_waits[rank=1].arrived_last": STEPS,
    },
    forbidden_problems=("clock_skew",),
)

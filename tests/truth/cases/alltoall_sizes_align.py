"""All-to-alls at a perfectly regular interval, of varying sizes, without ``Seq``; rank 1's window
opens one all-to-all later than rank 0's.

The process group and message sizes are on the kernels (torch before ``Seq`` was recorded), the
timing tells nothing (every all-to-all starts 2 ms after the previous one): only the sequence of
sizes shows that rank 1's first all-to-all is rank 0's second.
"""

from __future__ import annotations

from pathlib import Path

from tests.truth.harness import Case
from tests.truth.kineto import RankTrace, nccl_collective, write_traces

RANKS = 2
PERIOD_US = 2000.0
NELEMS = [1 << 20, 3 << 20, 2 << 20, 5 << 20, 1 << 20, 4 << 20]  # tokens routed per expert vary by batch
KERNEL = "ncclDevKernel_SendRecv"  # all_to_all_single runs as grouped send/recv kernels
OWN_US = 120.0
LATE_US = 15.0  # rank 0 arrives later


def traces() -> list[RankTrace]:
    out = []
    for rank in range(RANKS):
        t = RankTrace(rank=rank, world_size=RANKS, host="node-a")
        for i, nelems in enumerate(NELEMS):
            if rank == 1 and i == 0:
                continue
            start = 100.0 + i * PERIOD_US
            begin = start + (LATE_US if rank == 0 else 0.0)
            end = start + LATE_US + OWN_US
            nccl_collective(t, begin - 50.0, begin, end - begin, collective="all_to_allv", kernel=KERNEL,
                            nelems=nelems)
        out.append(t)
    return out


def build(folder: Path) -> Path:
    return write_traces(folder, traces())


_BOTH = len(NELEMS) - 1

CASE = Case(
    name="alltoall_sizes_align",
    situation="all-to-alls of varying size at a regular interval, no Seq; one rank's window opens one "
    "collective later",
    source="torch's all_to_allv record_param_comms args (In/Out msg nelems, dtype, Process Group Name) copied "
    "by libkineto onto NCCL's SendRecv kernels",
    truth="hand count",
    build=build,
    numbers={
        "summary:matched_collectives.#": _BOTH,
        "summary:matched_collectives.values(collective)": ["alltoall"] * _BOTH,
        "summary:matched_collectives.max(end_spread_ns)": 0,
        "summary:matched_collectives.values(size_bytes)": [n * 4 for n in NELEMS[1:]],
        "summary:matched_collectives.max(latency_ns)": round(OWN_US * 1000),
        "summary:collective_waits[rank=1].wait_ns": round(_BOTH * LATE_US * 1000),
        "summary:collective_waits[rank=0].arrived_last": _BOTH,
    },
    forbidden_problems=("clock_skew",),
)

"""Four ranks on two hosts whose clocks are 5 ms apart; process group and ``Seq`` recorded.

The ranks of host b stamp every event 5 ms later than the same moment on host a. The
collectives still end together in truth: their ends measure the offset, which the cross-rank
figures take off, and ``verify`` must raise the skew.
"""

from __future__ import annotations

from pathlib import Path

from tests.truth.harness import Case
from tests.truth.kineto import RankTrace, nccl_allreduce, write_traces

RANKS, STEPS = 4, 4
HOST = {0: "host-a", 1: "host-a", 2: "host-b", 3: "host-b"}
CLOCK_US = {"host-a": 0.0, "host-b": 5000.0}
STEP_US = (6000.0, 7500.0, 6400.0, 8100.0)
ARRIVE_US = {0: 2000.0, 1: 2040.0, 2: 2010.0, 3: 2100.0}  # true time into the step; rank 3 last
OWN_US = 300.0


def step_start(step: int) -> float:
    return 1000.0 + sum(STEP_US[:step])


def traces() -> list[RankTrace]:
    out = []
    for rank in range(RANKS):
        t = RankTrace(rank=rank, world_size=RANKS, host=HOST[rank])
        shift = CLOCK_US[HOST[rank]]
        for step in range(STEPS):
            start = step_start(step)
            t.step(step, start + shift, STEP_US[step] - 200.0)
            mm = t.op("aten::mm", start + shift + 5.0, 30.0)
            t.launch(mm, start + shift + 10.0, "sm90_gemm", start + shift + 20.0, ARRIVE_US[rank] - 40.0)
            begin = start + ARRIVE_US[rank]
            end = start + max(ARRIVE_US.values()) + OWN_US
            nccl_allreduce(t, start + shift + 50.0, begin + shift, end - begin, seq=step)
        out.append(t)
    return out


def build(folder: Path) -> Path:
    return write_traces(folder, traces())


_LAST_LATE_NS = round((max(ARRIVE_US.values()) - min(ARRIVE_US.values())) * 1000)

CASE = Case(
    name="two_hosts_clock_offset",
    situation="four ranks on two hosts whose clocks are 5 ms apart; Seq recorded",
    source="torch's ParamCommsUtils Seq and Process Group Name on NCCL kernels; each host stamps CLOCK_REALTIME",
    truth="hand count",
    build=build,
    numbers={
        "summary:clock_offsets[rank=2].offset_ns": round(CLOCK_US["host-b"] * 1000),
        "summary:clock_offsets[rank=3].applied": True,
        "summary:clock_offsets[rank=1].offset_ns": 0,
        "summary:clock_offsets.max(uncertainty_ns)": 0,
        "summary:matched_collectives.#": STEPS,
        "summary:matched_collectives.max(end_spread_ns)": 0,
        "summary:matched_collectives.values(max_skew_ns)": [_LAST_LATE_NS] * STEPS,
        "summary:matched_collectives.values(last_rank)": [3] * STEPS,
    },
    expected_problems=("clock_skew",),
)

"""Two jobs' rank-0 traces (recorded 77 million seconds apart) given together: two runs, never one rank."""

from __future__ import annotations

from pathlib import Path

from tests.truth.harness import Case
from tests.truth.kineto import BASE_NS, RankTrace

LATER_NS = 77_000_000 * 10**9  # the second job, about 2.4 years later
STEP_US = 1000.0


def trace(job: int) -> RankTrace:
    """One training step of rank 0 of a 2-rank job; each job's rank 0 is its own process (pid)."""
    t = RankTrace(rank=0, world_size=2, base_ns=BASE_NS + job * LATER_NS, pid=4000 + job)
    t.step(0, 0, STEP_US)
    ext = t.op("aten::mm", 10, 500)
    t.launch(ext, 20, "sm90_xmma_gemm_f32f32", 40, 300 + 100 * job)
    return t


def build(folder: Path) -> Path:
    for job in (0, 1):
        trace(job).write(folder / "traces", name=f"job{job}_rank0.pt.trace.json")
    return folder / "traces"


def hand_count() -> dict[str, int]:
    """Each run's wall: its first event's start to its last event's end (ns); one step per run."""
    walls = []
    for job in (0, 1):
        events = [e for e in trace(job).events if e["ph"] == "X"]
        start = min(e["ts"] for e in events)
        end = max(e["ts"] + e["dur"] for e in events)
        walls.append(round((end - start) * 1000))
    return {"max_wall_ns": max(walls), "runs": 2}


_COUNT = hand_count()

CASE = Case(
    name="two_jobs_rank0",
    situation="two jobs' rank-0 traces, recorded by two processes 77 million seconds apart, given together",
    source="torch.profiler's distributedInfo (rank, world_size) and the recording process's pid in each trace",
    truth="hand count",
    build=build,
    numbers={
        "summary:overview.#": _COUNT["runs"],
        "summary:overview.max(wall_ns)": _COUNT["max_wall_ns"],
        "summary:overview.values(rank)": [0, 0],
        "summary:overview.max(steps)": 1,
    },
    forbidden_findings=("gpu_idle_host_bound",),  # the 77 million s between the jobs is no idle time
    expected_problems=("duplicate_rank",),
)

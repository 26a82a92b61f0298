"""A real CPU rank of a gloo job recorded by others (tests/data/import-cpu-gloo): its gloo
all-reduces are annotations that ``key_averages`` lists, and a CPU trace has no device."""

from __future__ import annotations

from tests.truth.harness import Case
from tests.truth.real_traces import DATA, copying, per_name, slices

TRACE = DATA / "import-cpu-gloo" / "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
_EVENTS = slices(TRACE)
_CALLS, _TOTAL_NS = per_name(_EVENTS, "user_annotation")
_STEPS = sum(1 for e in _EVENTS if str(e["name"]).startswith("ProfilerStep#"))


CASE = Case(
    name="real_cpu_gloo",
    situation="a real CPU rank of a gloo job: host collectives, no device",
    source="tests/data/import-cpu-gloo (torch.profiler, gloo backend; README names its origin)",
    truth="hand count",
    build=copying(TRACE),
    numbers={
        "summary:top_ops[name=gloo:all_reduce].calls": _CALLS["gloo:all_reduce"],
        "summary:top_ops[name=gloo:all_reduce].total_ns": _TOTAL_NS["gloo:all_reduce"],
        "summary:overview[rank=34].steps": _STEPS,
        "summary:temporal_breakdown.#": 0,
    },
    forbidden_findings=("sync_in_step", "gpu_idle_host_bound", "device_starts_late"),
    forbidden_problems=("clock_skew", "duplicate_rank", "no_device_activity"),
)

"""A real CPU capture with Python stacks (tests/data/ingest-cpu-capture, ``with_stack=True``):
Python frames between ops do not change the ops' calls and times."""

from __future__ import annotations

from tests.truth.harness import Case
from tests.truth.real_traces import DATA, copying, per_name, slices

TRACE = DATA / "ingest-cpu-capture" / "cpu_mlp_with_stack.pt.trace.json.gz"
_EVENTS = slices(TRACE)
_CALLS, _TOTAL_NS = per_name(_EVENTS, "cpu_op")
_NAMES = ("aten::addmm", "aten::t", "aten::relu", "aten::linear")


CASE = Case(
    name="real_cpu_with_stack",
    situation="a real CPU capture with with_stack=True: 257 Python frames around the ops",
    source="tests/data/ingest-cpu-capture (kinetoscope's own CPU capture of an MLP; README)",
    truth="hand count",
    build=copying(TRACE),
    summary_args=("--top", "200"),
    numbers={
        **{f"summary:top_ops[name={name}].calls": _CALLS[name] for name in _NAMES if _CALLS[name]},
        **{f"summary:top_ops[name={name}].total_ns": _TOTAL_NS[name] for name in _NAMES if _CALLS[name]},
        "summary:temporal_breakdown.#": 0,
    },
    forbidden_findings=("sync_in_step", "gpu_idle_host_bound"),
    forbidden_problems=("clock_skew", "duplicate_rank", "no_device_activity"),
)

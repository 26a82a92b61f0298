"""A plain single-rank CPU trace: torch.profiler with ``ProfilerActivity.CPU`` only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.truth.harness import Case
from tests.truth.kineto import RankTrace

STEPS = 3
STEP_US = 1000.0


def trace() -> RankTrace:
    """Three steps of forward ops nested as torch records them: linear > addmm, relu; and a loss."""
    t = RankTrace(rank=0, device=None)
    for step in range(STEPS):
        start = step * (STEP_US + 100.0)
        t.step(step, start, STEP_US)
        t.op("aten::linear", start + 10, 400)
        t.op("aten::t", start + 20, 30)
        t.op("aten::addmm", start + 60, 300)
        t.op("aten::relu", start + 420, 120)
        t.op("aten::mse_loss", start + 560, 200)
        t.op("aten::mean", start + 600, 80)
    return t


def build(folder: Path) -> Path:
    return trace().write(folder)


def _contains(outer: dict[str, Any], inner: dict[str, Any]) -> bool:
    return bool(outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"])


def hand_count(t: RankTrace) -> dict[str, Any]:
    """Self time per op name: its duration minus its direct children's (ops nest by time on one thread)."""
    ops = [e for e in t.events if e["cat"] == "cpu_op"]
    self_us: dict[str, float] = {}
    calls: dict[str, int] = {}
    for op in ops:
        inside = [c for c in ops if c is not op and _contains(op, c)]
        children = [c for c in inside if not any(m is not c and _contains(m, c) for m in inside)]
        self_us[op["name"]] = self_us.get(op["name"], 0.0) + op["dur"] - sum(c["dur"] for c in children)
        calls[op["name"]] = calls.get(op["name"], 0) + 1
    return {"self_ns": {k: round(v * 1000) for k, v in self_us.items()}, "calls": calls}


_COUNT = hand_count(trace())

CASE = Case(
    name="cpu_single_rank",
    situation="a plain single-rank CPU trace (ProfilerActivity.CPU only): no device, no collectives",
    source="torch.profiler's CPU ops (cpu_op with External id) and ProfilerStep#N annotations",
    truth="hand count",
    build=build,
    numbers={
        "summary:overview[rank=0].steps": STEPS,
        "summary:top_ops[name=aten::linear].self_ns": _COUNT["self_ns"]["aten::linear"],
        "summary:top_ops[name=aten::addmm].self_ns": _COUNT["self_ns"]["aten::addmm"],
        "summary:top_ops[name=aten::mse_loss].self_ns": _COUNT["self_ns"]["aten::mse_loss"],
        "summary:top_ops[name=aten::addmm].calls": _COUNT["calls"]["aten::addmm"],
        "summary:matched_collectives.#": 0,
        "summary:temporal_breakdown.#": 0,
        "verify:status": "ok",
    },
    forbidden_findings=("sync_in_step", "gpu_idle_host_bound", "collective_straggler"),
    forbidden_problems=("clock_skew", "duplicate_rank"),
)

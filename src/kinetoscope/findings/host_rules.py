"""Rules on what the host does: synchronisations, compilation, tiny ops, allocator calls."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kinetoscope.analysis.tables import length
from kinetoscope.findings.engine import Observation, rule, severity_by_share
from kinetoscope.findings.ranks import RankData, top_names
from kinetoscope.model import blocking, compilation, graphs, kinds

NS_PER_US = 1_000
NS_PER_MS = 1_000_000
SYNC_CALLS = blocking.SYNC_CALLS
# On a CPU-only rank, a tensor read into Python (``.item()``, ``.tolist()`` one value at a time).
SCALAR_READS = ("aten::_local_scalar_dense",)
COMPILE_PATTERN = compilation.PATTERN
FRAME_COMPILES = (compilation.FRAME_COMPILE_INNER,)
COMPILED_REGIONS = compilation.COMPILED_REGIONS
STEP_PREFIX = kinds.STEP_PREFIX
ALLOCATOR_CALLS = ("cudaMalloc", "cudaFree", "cudaMallocHost", "cudaFreeHost", "cudaHostAlloc", "hipMalloc", "hipFree")


def _per_step(count: int, data: RankData) -> float:
    return round(count / max(data.step_count, 1), 2)


@rule(
    "sync_in_step",
    "Host waits for the device inside the step",
    "medium",
    "Keep values on the device (no `.item()`, `.cpu()`, `.tolist()` or printing of tensors inside the step) "
    "or read them once per N steps; use `non_blocking=True` copies into pinned memory for results you need.",
    min_calls=2,
    needs=("device",),
)
def sync_in_step(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """Synchronising calls inside steps, named by the op that made them; a wait for a CUDA/HIP graph
    replay (the host reading the replay's result) is not one (``model.graphs``)."""
    inside = data.in_steps()
    if data.device_work.any():
        rows = np.flatnonzero(inside & data.kind(kinds.RUNTIME_CALL) & data.name_in(SYNC_CALLS))
        rows = rows[~graphs.waits_for_replay(data.ints("ts_ns")[rows], data.replay_spans)]
        basis = "the host's time blocked in the synchronising calls (it could have queued work meanwhile)"
    else:
        rows = np.flatnonzero(inside & data.kind(kinds.OP) & data.name_in(SCALAR_READS))
        basis = "the time of the scalar reads themselves (on a CPU they block no device; on a GPU each would wait)"
    if len(rows) < limits["min_calls"]:
        return []
    by_op = data.op_names(rows)
    causes = top_names(np.where(by_op == "", "(no op)", by_op), data.ints("dur_ns")[rows])
    total_ns = int(data.ints("dur_ns")[rows].sum())
    seen = {
        "calls": len(rows),
        "calls_per_step": _per_step(len(rows), data),
        "blocked_ns": total_ns,
        "calls_by_name": data.top_names_at(rows, data.ints("dur_ns")[rows]),
        "caused_by_op": causes,
    }
    where = f"inside steps ({seen['calls_per_step']} per step)" if data.has_steps else "in the window (no steps)"
    summary = (
        f"{len(rows)} synchronisation(s) {where}, "
        f"{total_ns / NS_PER_US:.1f} µs blocked, mostly from {causes[0]['name']} ({causes[0]['count']} calls)"
    )
    return [Observation(summary, seen, rows, total_ns, basis, severity_by_share(total_ns, data.wall_ns))]


@rule(
    "compile_in_window",
    "Compilation inside the profiled window",
    "high",
    "Run a few warm-up steps before profiling (`schedule(wait=1, warmup=2, active=N)`) so compilation and "
    "autotuning happen outside the window; if it recurs, look for recompilations (`TORCH_LOGS=recompiles`).",
    min_compile_ms=1,
)
def compile_in_window(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """torch.compile (Dynamo, Inductor, autotuning) frames inside the trace, with their covered time."""
    compiling = data.name_matches(COMPILE_PATTERN) & ~data.device_work
    if not compiling.any():
        return []
    start = data.ints("ts_ns")[compiling]
    compile_ns = length(start, start + data.ints("dur_ns")[compiling])
    if compile_ns < limits["min_compile_ms"] * NS_PER_MS:
        return []
    frames = int(data.name_in(FRAME_COMPILES).sum())
    seen = {
        "compile_ns": compile_ns,
        "frame_compiles": frames,
        "compiled_region_calls": int(data.name_in(COMPILED_REGIONS).sum()),
        "share_of_wall_pct": round(100 * compile_ns / max(data.wall_ns, 1), 2),
    }
    outer = np.flatnonzero(compiling & (data.ints("depth") == data.ints("depth")[compiling].min()))
    summary = (
        f"compilation covers {compile_ns / NS_PER_MS:.1f} ms ({seen['share_of_wall_pct']}% of the window), "
        f"{frames} frame compile(s)"
    )
    basis = "the time covered by compilation frames; after warm-up, compiled code runs without it"
    return [Observation(summary, seen, outer, compile_ns, basis)]


@rule(
    "tiny_ops",
    "Thousands of tiny ops per step (CPU)",
    "medium",
    "Fuse the small ops: wrap the step in `torch.compile` (or batch the loop into fewer, larger tensor ops); "
    "each eager op pays dispatch overhead larger than its work.",
    min_ops_per_step=1000,
    max_mean_op_us=50,
    assumed_saving_pct=50,
    needs=("device",),
)
def tiny_ops(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """On a rank with no device work: many short top-level ops in each step."""
    if data.device_work.any():
        return []
    rows = np.flatnonzero(data.top_level_ops & data.in_steps())
    per_step = _per_step(len(rows), data)
    mean_ns = float(data.ints("dur_ns")[rows].mean()) if len(rows) else 0.0
    if per_step < limits["min_ops_per_step"] or mean_ns > limits["max_mean_op_us"] * NS_PER_US:
        return []
    self_ns = int(data.ints("self_ns")[data.kind(kinds.OP) & data.in_steps()].sum())
    total_ns = int(data.ints("dur_ns")[rows].sum())
    seen = {
        "ops": len(rows),
        "ops_per_step": per_step,
        "mean_op_ns": round(mean_ns, 1),
        "op_time_ns": total_ns,
        "op_self_ns": self_ns,
        "top_ops": data.top_names_at(rows, data.ints("dur_ns")[rows]),
    }
    summary = f"{per_step:.0f} top-level ops per step, {mean_ns / NS_PER_US:.2f} µs each on average"
    gain_ns = int(total_ns * limits["assumed_saving_pct"] / 100)
    basis = (
        f"{limits['assumed_saving_pct']:g}% of the top-level ops' time (tiny_ops.assumed_saving_pct): "
        "fused, the arithmetic stays and most of the per-op dispatch goes"
    )
    return [Observation(summary, seen, rows, gain_ns, basis, severity_by_share(gain_ns, data.wall_ns))]


@rule(
    "allocator_thrash",
    "Device allocator calls in the steady state",
    "medium",
    "Let the caching allocator keep its blocks: avoid `torch.cuda.empty_cache()` in the loop, keep shapes "
    "stable (pad variable lengths), and set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` for fragmentation.",
    min_calls=2,
)
def allocator_thrash(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """cudaMalloc / cudaFree (and their HIP and host-pinned kin) after the first step."""
    rows = np.flatnonzero(data.steady_state() & data.kind(kinds.RUNTIME_CALL) & data.name_in(ALLOCATOR_CALLS))
    if len(rows) < limits["min_calls"]:
        return []
    total_ns = int(data.ints("dur_ns")[rows].sum())
    seen = {
        "calls": len(rows),
        "time_ns": total_ns,
        "steady_state": "after the first step" if data.step_count >= 2 else "whole window (fewer than two steps)",
        "calls_by_name": data.top_names_at(rows, data.ints("dur_ns")[rows]),
        "caused_by_op": top_names(np.asarray(data.op_names(rows), dtype=object), data.ints("dur_ns")[rows]),
    }
    summary = f"{len(rows)} allocator call(s) taking {total_ns / NS_PER_MS:.2f} ms ({seen['steady_state']})"
    basis = "the time of the allocator calls: a warm caching allocator serves these from its pool"
    return [Observation(summary, seen, rows, total_ns, basis, severity_by_share(total_ns, data.wall_ns))]


@rule(
    "python_bound",
    "Steps spend most of their time in Python (CPU)",
    "medium",
    "Move the Python work named here out of the step (DataLoader workers, precomputed inputs) or express it "
    "as tensor ops; Python holds the GIL, so other threads (and intra-op work) wait on it.",
    min_python_pct=30,
)
def python_bound(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """On a rank with no device work, recorded ``with_stack=True``: Python frames' own time (not in ops)
    as a share of the steps."""
    python = data.kind(kinds.PYTHON) & data.in_steps()
    if data.device_work.any() or not python.any():
        return []
    steps = data.name_matches("^" + STEP_PREFIX)
    step_ns = int(data.ints("dur_ns")[steps].sum()) if steps.any() else data.wall_ns
    own = data.ints("self_ns")[python]
    python_ns = int(own.sum())
    share_pct = 100 * python_ns / max(step_ns, 1)
    if share_pct < limits["min_python_pct"]:
        return []
    rows = np.flatnonzero(python)
    seen: dict[str, Any] = {
        "python_ns": python_ns,
        "step_ns": step_ns,
        "python_pct_of_steps": round(share_pct, 2),
        "top_frames": data.top_names_at(rows, own),
    }
    top = seen["top_frames"][0]["name"]
    summary = f"Python frames' own time is {seen['python_pct_of_steps']}% of the steps, most in {top}"
    basis = "the Python frames' own time: work moved off the step (or into tensor ops) leaves it"
    return [Observation(summary, seen, rows, python_ns, basis, severity_by_share(python_ns, data.wall_ns))]

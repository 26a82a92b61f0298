"""Rules against the hardware: GEMMs far below their roofline, and GEMM shapes that waste the
tensor cores (``analysis/roofline/gemm_rates.py`` groups the GEMMs and rates them)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kinetoscope.analysis.ops import attribution
from kinetoscope.analysis.roofline import device_peaks
from kinetoscope.analysis.roofline.gemm_rates import GemmGroup, gemm_groups
from kinetoscope.findings.engine import Observation, rule, severity_by_share
from kinetoscope.findings.ranks import RankData

NS_PER_US = 1_000
NS_PER_MS = 1_000_000
SHOWN_GROUPS = 5


def _device(data: RankData) -> tuple[str, device_peaks.Device | None]:
    """The rank's ``deviceProperties`` name and its device table entry (or the ``--device`` one)."""
    sessions = data.sessions
    recorded = sessions is not None and "device_name" in sessions.column_names
    names = sessions["device_name"].to_pylist() if sessions is not None and recorded else []
    name = next((str(n) for n in names if n), "")
    return name, device_peaks.pick(name)


def _gain_ns(group: GemmGroup, target_pct: float) -> int:
    """The time above what the group's FLOPs take at ``target_pct`` of its attainable rate."""
    at_target = group.time_at_ns(target_pct)
    return 0 if at_target is None else max(group.time_ns - at_target, 0)


def _kernels_of(data: RankData, groups: list[GemmGroup]) -> np.ndarray:
    """Rows of the device work the groups' op instances launched (the evidence)."""
    launched = attribution.launches(data.events)
    mine = np.zeros(data.events.num_rows, dtype=bool)
    for group in groups:
        mine[group.positions] = True
    hit = (launched.op >= 0) & mine[np.maximum(launched.op, 0)]
    found: np.ndarray = launched.work[hit]
    return found


@rule(
    "gemm_below_roofline",
    "GEMMs far below the roofline of their shape",
    "medium",
    "Feed the tensor cores: run these products in bf16/fp16 (`torch.autocast`) or allow TF32 for float "
    "(`torch.backends.cuda.matmul.allow_tf32 = True`), keep operands contiguous, pad M/N/K to multiples of 8, "
    'batch small products into larger ones, or let `torch.compile(mode="max-autotune")` pick the kernels.',
    max_roofline_pct=30,
    target_pct=50,
    min_ideal_us=10,
    min_gain_pct=1,
    needs=("device", "replay_capture"),
)
def gemm_below_roofline(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """GEMM shapes whose achieved FLOP/s is under ``max_roofline_pct`` of the attainable rate
    (min(peak for the dtype, intensity × bandwidth)) on a device in the table; a GEMM that would
    take under ``min_ideal_us`` a call even at the attainable rate is too small to fill the device
    (launch and tail effects rule it) and is not judged."""
    name, device = _device(data)
    if device is None:
        return []
    groups = gemm_groups(data.events, device)
    slow = [
        g
        for g in groups
        if g.roofline_pct is not None
        and g.roofline_pct < limits["max_roofline_pct"]
        and (g.time_at_ns(100) or 0) >= limits["min_ideal_us"] * NS_PER_US * g.calls
    ]
    gains = {id(g): _gain_ns(g, limits["target_pct"]) for g in slow}
    slow = sorted((g for g in slow if gains[id(g)] > 0), key=lambda g: -gains[id(g)])
    busy_ns = attribution.launches(data.events).busy_ns
    gain_ns = sum(gains[id(g)] for g in slow)
    if not slow or gain_ns < limits["min_gain_pct"] / 100 * busy_ns:
        return []
    worst = slow[0]
    seen: dict[str, Any] = {
        "device": device.name,
        "device_name": name,
        "gemm_shapes": len(slow),
        "gemm_time_ns": sum(g.time_ns for g in slow),
        "all_gemm_time_ns": sum(g.time_ns for g in groups),
        "device_busy_ns": busy_ns,
        "groups": [{**g.describe(), "gain_ns": gains[id(g)]} for g in slow[:SHOWN_GROUPS]],
    }
    summary = (
        f"{len(slow)} GEMM shape(s) under {limits['max_roofline_pct']:g}% of their roofline on {device.name}: "
        f"{seen['gemm_time_ns'] / NS_PER_MS:.2f} ms of device time; the largest loss, {worst.op} "
        f"{worst.input_dims} ({worst.dtype}), reached {worst.tflops_per_s:.2f} of "
        f"{worst.attainable_tflops_per_s:.1f} TFLOP/s attainable ({worst.roofline_pct:.1f}%)"
    )
    basis = (
        f"the time above what these GEMMs would take at {limits['target_pct']:g}% of their attainable rate "
        "(min(peak for the dtype, FLOPs per byte × memory bandwidth), datasheet figures)"
    )
    return [Observation(summary, seen, _kernels_of(data, slow), gain_ns, basis, severity_by_share(gain_ns, busy_ns))]


@rule(
    "tensor_core_shapes",
    "GEMM shapes that waste the tensor cores",
    "low",
    "Pad the dimensions named here to the multiple (hidden and vocabulary sizes to multiples of 64, "
    "`pad_to_multiple_of=8` in the tokenizer or collator for batch × sequence), and gather tiny batched "
    "products into fewer, larger ones (fuse heads, grouped GEMMs, `torch.compile`).",
    min_time_pct=1,
    target_pct=50,
    needs=("device", "replay_capture"),
)
def tensor_core_shapes(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """fp16/bf16 GEMMs with M, N or K off a multiple of 8 (16 for fp8), and tiny batched GEMMs,
    when they take ``min_time_pct`` of the device's busy time."""
    name, device = _device(data)
    wasteful = [g for g in gemm_groups(data.events, device) if g.waste is not None]
    busy_ns = attribution.launches(data.events).busy_ns
    time_ns = sum(g.time_ns for g in wasteful)
    if not wasteful or time_ns < limits["min_time_pct"] / 100 * busy_ns:
        return []
    gain_ns = sum(_gain_ns(g, limits["target_pct"]) for g in wasteful)
    seen: dict[str, Any] = {
        "device": None if device is None else device.name,
        "device_name": name,
        "gemm_shapes": len(wasteful),
        "gemm_time_ns": time_ns,
        "pct_of_busy": round(100 * time_ns / max(busy_ns, 1), 2),
        "groups": [{**g.describe(), "waste": g.waste} for g in wasteful[:SHOWN_GROUPS]],
    }
    first = wasteful[0]
    summary = (
        f"{len(wasteful)} GEMM shape(s) that waste the tensor cores take {time_ns / NS_PER_MS:.2f} ms "
        f"({seen['pct_of_busy']}% of device busy time); the longest, {first.op} {first.input_dims} "
        f"({first.dtype}): {first.waste}"
    )
    basis = (
        f"the time above what these GEMMs would take at {limits['target_pct']:g}% of their attainable rate"
        if device is not None
        else "not estimated: the device is not in the table (set --device)"
    )
    return [Observation(summary, seen, _kernels_of(data, wasteful), gain_ns, basis, None)]

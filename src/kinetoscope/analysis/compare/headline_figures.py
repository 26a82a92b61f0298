"""The headline figures of two runs side by side: step times, and per rank or for the whole run,
device time, communication and memory.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from kinetoscope.analysis._tables.rank_slices import Tables
from kinetoscope.analysis.compare.aggregates import combined_noise_ns, delta_pct, distribution
from kinetoscope.analysis.device import device_time
from kinetoscope.analysis.time import overview
from kinetoscope.model import significance


def step_comparison(base_ns: Sequence[float], new_ns: Sequence[float]) -> dict[str, Any]:
    """Both sides' step-time distributions, the delta of the medians and whether it exceeds the spread."""
    base, new = distribution(base_ns), distribution(new_ns)
    if not base["count"] or not new["count"]:
        return {
            "base": base,
            "new": new,
            "delta_median_ns": None,
            "delta_pct": None,
            "noise_ns": None,
            "significant": None,
            "test": significance.per_step_change(base_ns, new_ns).to_json(),
        }
    delta = float(new["median_ns"] or 0) - float(base["median_ns"] or 0)
    noise = combined_noise_ns(np.asarray(base_ns, float), np.asarray(new_ns, float))
    test = significance.per_step_change(base_ns, new_ns)
    return {
        "base": base,
        "new": new,
        "delta_median_ns": delta,
        "delta_pct": delta_pct(float(base["median_ns"] or 0), float(new["median_ns"] or 0)),
        "noise_ns": noise,
        "significant": test.significant,
        "test": test.to_json(),
    }


# figure -> how ranks combine into the whole run's value
_FIGURES: dict[str, Callable[[list[float]], float]] = {
    "steps": lambda v: int(min(v)),
    "step_median_ns": max,
    "wall_ns": max,
    "cpu_busy_pct": lambda v: float(np.mean(v)),
    "device_busy_pct": lambda v: float(np.mean(v)),
    "device_idle_pct": lambda v: float(np.mean(v)),
    "compute_per_step_ns": lambda v: float(np.mean(v)),
    "communication_per_step_ns": lambda v: float(np.mean(v)),
    "memory_per_step_ns": lambda v: float(np.mean(v)),
    "device_idle_per_step_ns": lambda v: float(np.mean(v)),
    "collective_per_step_ns": lambda v: float(np.mean(v)),
    "collective_overlap_pct": lambda v: float(np.mean(v)),
    "memcpy_per_step_ns": lambda v: float(np.mean(v)),
    "host_memory_peak_bytes": max,
    "device_memory_peak_bytes": max,
    "allocation_peak_bytes": max,
}


def rank_figures(tables: Tables) -> dict[int, dict[str, float | None]]:
    """Per rank: the overview's and the temporal breakdown's figures, times divided by the rank's steps."""
    temporal = {r["rank"]: r for r in device_time.temporal_breakdown(tables).to_pylist()}
    out: dict[int, dict[str, float | None]] = {}
    for row in overview.rank_overview(tables).to_pylist():
        rank, t = row["rank"], temporal.get(row["rank"], {})
        n = max(int(row["steps"] or 0), 1)
        out[rank] = {
            "steps": row["steps"],
            "wall_ns": row["wall_ns"],
            "cpu_busy_pct": row["cpu_busy_pct"],
            "device_busy_pct": row["device_busy_pct"],
            "device_idle_pct": row["device_idle_pct"],
            "compute_per_step_ns": _per(t.get("compute_ns"), n),
            "communication_per_step_ns": _per(t.get("communication_ns"), n),
            "memory_per_step_ns": _per(t.get("memory_ns"), n),
            "device_idle_per_step_ns": _per(t.get("idle_ns"), n),
            "collective_per_step_ns": _per(row["collective_ns"], n),
            "collective_overlap_pct": row["collective_overlap_pct"],
            "memcpy_per_step_ns": _per(row["memcpy_ns"], n),
            "host_memory_peak_bytes": row["host_memory_peak_bytes"],
            "device_memory_peak_bytes": row["device_memory_peak_bytes"],
            "allocation_peak_bytes": row["allocation_peak_bytes"],
        }
    return out


def _per(value: float | None, n: int) -> float | None:
    return None if value is None else value / n


def combined_figures(per_rank_figures: Iterable[dict[str, float | None]]) -> dict[str, float | None]:
    ranks = list(per_rank_figures)
    out: dict[str, float | None] = {}
    for name, combine in _FIGURES.items():
        values = [float(v) for r in ranks if (v := r.get(name)) is not None]
        out[name] = combine(values) if values else None
    return out


def compare_figures(base: dict[str, float | None], new: dict[str, float | None]) -> list[dict[str, Any]]:
    rows = []
    for name in _FIGURES:
        b, n = base.get(name), new.get(name)
        if b is None and n is None:
            continue
        delta = None if b is None or n is None else n - b
        rows.append(
            {
                "figure": name,
                "base": b,
                "new": n,
                "delta": delta,
                "delta_pct": None if delta is None or b is None else delta_pct(b, b + delta),
            }
        )
    return rows

"""Per-step aggregates of one side of a diff, and how two are compared: each row group's total and
per-step values divided by the side's steps (and ranks), the delta, whether it is significant
(``model.significance``), and rows ordered by impact on step time.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables.column_arrays import codes, ints
from kinetoscope.analysis._tables.selection import where
from kinetoscope.model import significance

KernelKey = tuple[str, str, str]  # (launching op's name, kernel name, kind)
MATCHED, RESHAPED, REPLACED, GONE, NEW = "matched", "reshaped", "replaced", "gone", "new"


@dataclass
class Side:
    """One side's events within its steps, with the step numbers and the rank count to divide by."""

    events: pa.Table
    step_numbers: list[int]
    ranks: int
    placed: dict[Any, pa.Table] = field(default_factory=dict)  # (run, rank) -> its ops with their places

    @property
    def per_step_divisor(self) -> int:
        return max(len(self.step_numbers), 1) * max(self.ranks, 1)

    def step_index(self, numbers: np.ndarray) -> np.ndarray:
        if not self.step_numbers:
            return np.zeros(len(numbers), np.int64)
        return np.searchsorted(np.asarray(self.step_numbers), numbers)


def make_side(events: pa.Table, durations: dict[int, int], ranks: int) -> Side:
    """``events`` restricted to the rows inside steps when there are steps (warm-up and tail left out)."""
    numbers = sorted(durations)
    if numbers:
        events = where(events, np.isin(ints(events, "step"), numbers))
    return Side(events, numbers, ranks)


@dataclass
class Agg:
    """Calls, total and self time of one key, and its main time (self for ops, duration for kernels) per step."""

    calls: int
    total_ns: int
    self_ns: int
    by_step_ns: np.ndarray

    def merged(self, other: Agg) -> Agg:
        return Agg(
            self.calls + other.calls,
            self.total_ns + other.total_ns,
            self.self_ns + other.self_ns,
            self.by_step_ns + other.by_step_ns,
        )


Coded = tuple[np.ndarray, Sequence[Any]]  # each row's code into the values, the values


def keyed(parts: Sequence[Coded], rows: int) -> tuple[np.ndarray, list[Any]]:
    """Each row's group over several coded columns, and each group's key: the value alone for one
    column, else the tuple of values. numpy throughout; Python only per group."""
    composite = np.zeros(rows, dtype=np.int64)
    for code, values in parts:
        composite = composite * (len(values) + 1) + code
    _, first, inverse = np.unique(composite, return_index=True, return_inverse=True)
    if len(parts) == 1:
        code, values = parts[0]
        return inverse.reshape(-1), [values[c] for c in code[first].tolist()]
    picked = [(code[first].tolist(), values) for code, values in parts]
    keys = [tuple(values[codes_[i]] for codes_, values in picked) for i in range(len(first))]
    return inverse.reshape(-1), keys


def aggregate(
    parts: Sequence[Coded], step_index: np.ndarray, total_ns: np.ndarray, self_ns: np.ndarray, n_steps: int
) -> dict[Any, Agg]:
    """Per key (``keyed`` over ``parts``): calls, total and self time, and self time in each step."""
    group, keys = keyed(parts, len(step_index))
    n, slots = len(keys), max(n_steps, 1)
    calls = np.bincount(group, minlength=n)
    total = np.bincount(group, weights=total_ns.astype(np.float64), minlength=n)
    own = np.bincount(group, weights=self_ns.astype(np.float64), minlength=n)
    by_step = np.bincount(group * slots + step_index, weights=self_ns.astype(np.float64), minlength=n * slots)
    by_step = by_step.reshape(n, slots)
    out: dict[Any, Agg] = {}
    for i, key in enumerate(keys):  # values repeated in a column (two codes of one text) merge here
        agg = Agg(int(calls[i]), int(total[i]), int(own[i]), by_step[i])
        out[key] = out[key].merged(agg) if key in out else agg
    return out


def coded(table: pa.Table, column: str) -> Coded:
    return codes(table, column)


def distribution(values_ns: Sequence[float]) -> dict[str, float | int | None]:
    """count, median, mean, p10, p90, min, max, stdev (sample) and IQR of per-step values (ns)."""
    values = np.asarray(values_ns, dtype=float)
    if not len(values):
        return {
            "count": 0,
            **dict.fromkeys(("median_ns", "mean_ns", "p10_ns", "p90_ns", "min_ns", "max_ns", "stdev_ns", "iqr_ns")),
        }
    p10, p25, median, p75, p90 = np.percentile(values, [10, 25, 50, 75, 90]).tolist()
    return {
        "count": len(values),
        "median_ns": median,
        "mean_ns": float(values.mean()),
        "p10_ns": p10,
        "p90_ns": p90,
        "min_ns": float(values.min()),
        "max_ns": float(values.max()),
        "stdev_ns": _stdev(values),
        "iqr_ns": p75 - p25,
    }


def _stdev(values: np.ndarray) -> float | None:
    return float(np.std(values, ddof=1)) if len(values) >= 2 else None


def combined_noise_ns(base: np.ndarray, new: np.ndarray) -> float | None:
    """sqrt(stdev(base)^2 + stdev(new)^2) of per-step values; None with fewer than two steps on a side."""
    sb, sn = _stdev(base), _stdev(new)
    return math.hypot(sb, sn) if sb is not None and sn is not None else None


def significant(base_by_step: np.ndarray, new_by_step: np.ndarray) -> bool | None:
    """Whether the per-step values changed (``model.significance``); None: too few steps to tell."""
    return significance.per_step_change(base_by_step, new_by_step).significant


def delta_pct(base: float, new: float) -> float | None:
    return round(100.0 * (new - base) / base, 2) if base else None


def figures(base: Agg | None, new: Agg | None, sides: tuple[Side, Side]) -> dict[str, Any]:
    """Per-step calls, total and self time of both sides, the delta of self time per step and its significance."""
    out: dict[str, Any] = {}
    by_step = []
    for label, given, side in (("base", base, sides[0]), ("new", new, sides[1])):
        div = side.per_step_divisor
        agg = given or Agg(0, 0, 0, np.zeros(max(len(side.step_numbers), 1)))
        out[f"{label}_calls_per_step"] = round(agg.calls / div, 3)
        out[f"{label}_total_per_step_ns"] = agg.total_ns / div
        out[f"{label}_self_per_step_ns"] = agg.self_ns / div
        by_step.append(agg.by_step_ns / max(side.ranks, 1))
    delta = out["new_self_per_step_ns"] - out["base_self_per_step_ns"]
    noise = combined_noise_ns(*by_step)
    out["delta_per_step_ns"] = delta
    out["delta_pct"] = delta_pct(out["base_self_per_step_ns"], out["new_self_per_step_ns"])
    out["noise_per_step_ns"] = noise
    out["significant"] = significant(*by_step)
    return out


def by_impact(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: -abs(r["delta_per_step_ns"]))


def merge_all(parts: Iterable[dict[Any, Agg]]) -> dict[Any, Agg]:
    out: dict[Any, Agg] = {}
    for part in parts:
        for key, agg in part.items():
            out[key] = out[key].merged(agg) if key in out else agg
    return out


def presence(key: Any, base: dict[Any, Agg], new: dict[Any, Agg]) -> str:
    return MATCHED if key in base and key in new else (GONE if key in base else NEW)

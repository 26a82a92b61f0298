"""Two runs compared: step times, device time, communication and memory, then what changed per
op, per op shape and per kernel, as time per step, sorted by impact on step time.

Matching survives real changes: ops match by name and input shape (``Input Dims`` and
``Input type`` of ``record_shapes``), and ops whose shape changed match by name
(``reshaped``); kernels match by name within their launching op, and a kernel gone under an op
where a new one appeared is shown as ``replaced``. What matches nothing is ``gone`` or ``new``.

Every time is divided by the side's steps (and ranks, for the whole run), so runs of different
lengths compare. Whether a delta is real is the model's decision (``model.significance``: a rank
test over both sides' per-step values, exact for few steps): ``significant`` is true or false, or
``None`` when the steps are too few for any answer at 95 % confidence. The report is a plain dict:
docs/compare.md.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pyarrow as pa

from kinetoscope.analysis import (
    allocation_diff,
    attribution,
    compare_verdict,
    device,
    host,
    op_paths,
    overview,
    shapes,
    steps,
)
from kinetoscope.analysis.frames import Tables, codes, id_positions, ints, is_in, per_rank, strings, where
from kinetoscope.analysis.options import TopOptions
from kinetoscope.model import kinds, significance

SCHEMA = "kinetoscope.diff"
SCHEMA_VERSION = 4  # 3: significant is a rank test (model.significance); step_time.test
# 4: verdict, comparability and waterfall (analysis.compare_verdict); docs/diff.schema.json
ALL_RANKS = "all"
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


# ---- statistics ---------------------------------------------------------------------------------


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


# ---- one row of a table -------------------------------------------------------------------------


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


# ---- ops ----------------------------------------------------------------------------------------


def op_aggregates(events: pa.Table, side: Side, with_shape: bool) -> dict[Any, Agg]:
    """Counted ops (``key_averages`` rules) of every rank, by name or by (name, shape)."""
    parts: list[dict[Any, Agg]] = []
    for kept, self_ns in _counted_ops(events, side):
        columns = [coded(kept, "name"), *([shape_codes(kept)] if with_shape else [])]
        idx = side.step_index(ints(kept, "step"))
        parts.append(aggregate(columns, idx, ints(kept, "dur_ns"), self_ns, len(side.step_numbers)))
    return _merge_all(parts)


def shape_codes(kept: pa.Table) -> Coded:
    """Each row's shape text (``Input Dims`` and ``Input type`` found by ``analysis.shapes``, no
    per-row parsing), made once per distinct pair."""
    found = shapes.input_shapes(kept.select(shapes.source_columns(kept)))
    group, pairs = keyed([codes(found, "input_dims"), codes(found, "input_types")], kept.num_rows)
    texts = [shape_text(dims, types) for dims, types in pairs]
    distinct = sorted(set(texts))
    at = {text: i for i, text in enumerate(distinct)}
    return np.asarray([at[text] for text in texts], dtype=np.int64)[group], distinct


def shape_text(dims: str, types: str) -> str:
    """``[[64,512],[512,512]] float,float``; empty without dims."""
    if not dims:
        return ""
    try:
        names = json.loads(types) if types else []
    except ValueError:
        names = []
    return dims + " " + ",".join(map(str, names))


def _counted_ops(events: pa.Table, side: Side, with_path: bool = False) -> Iterable[tuple[pa.Table, np.ndarray]]:
    """Per rank, the counted ops inside the side's steps and their self time; ``with_path`` adds
    each op's place: ``op_parent`` (its parent path in the op tree, ``analysis.op_paths``) and
    ``op_module`` (its nearest ``nn.Module:`` frame)."""
    host_rows = where(events, is_in(events, "layer", (kinds.FRAMEWORK, kinds.RUNTIME)))  # runtime calls decide folds
    for key, rank_events in per_rank(host_rows):
        if with_path and key not in side.placed:  # the op tree and the modules read the same places
            side.placed[key] = _with_places(rank_events)
        placed = side.placed[key] if with_path else rank_events
        kept, self_ns = host.counted_ops(placed)
        inside = np.isin(ints(kept, "step"), side.step_numbers) if side.step_numbers else np.ones(kept.num_rows, bool)
        kept, self_ns = where(kept, inside), self_ns[inside]
        yield kept, self_ns


def _with_places(events: pa.Table) -> pa.Table:
    """``events`` with ``op_parent`` and ``op_module`` as dictionary columns (no Python per row)."""
    found = op_paths.op_paths(events, is_in(events, "kind", kinds.OP_KINDS))
    parent = pa.DictionaryArray.from_arrays(
        pa.array(np.where(found.path >= 0, found.path, len(found.parent_text)), pa.int64()),
        pa.array([*found.parent_text, ""], pa.string()),
    )
    module = attribution.nearest_module(events, np.arange(events.num_rows))
    code, names = codes(events, "name")
    module_name = pa.DictionaryArray.from_arrays(
        pa.array(np.where(module >= 0, code[np.maximum(module, 0)], len(names)), pa.int64()),
        pa.array([*names, attribution.NO_MODULE], pa.string()),
    )
    return events.append_column("op_parent", parent).append_column("op_module", module_name)


PathKey = tuple[str, str]  # (parent path in the op tree, op name)


def op_path_aggregates(events: pa.Table, side: Side) -> dict[PathKey, Agg]:
    """Counted ops of every rank by their place in the op tree: (parent path, name)."""
    parts = []
    for kept, self_ns in _counted_ops(events, side, with_path=True):
        columns = [coded(kept, "op_parent"), coded(kept, "name")]
        idx = side.step_index(ints(kept, "step"))
        parts.append(aggregate(columns, idx, ints(kept, "dur_ns"), self_ns, len(side.step_numbers)))
    return _merge_all(parts)


def compare_op_tree(
    base: dict[PathKey, Agg], new: dict[PathKey, Agg], sides: tuple[Side, Side]
) -> list[dict[str, Any]]:
    """Ops matched by path in the op tree; under one parent path (not at the top), the ops gone and
    the ops new pair up, most self time first, as ``replaced`` (a fused op, a renamed one)."""
    rows = [_tree_row((k, k), MATCHED, base[k], new[k], sides) for k in base.keys() & new.keys()]
    gone = _by_parent({k: v for k, v in base.items() if k not in new})
    added = _by_parent({k: v for k, v in new.items() if k not in base})
    for parent in gone | added:
        olds, news = gone.get(parent, []), added.get(parent, [])
        pairs = min(len(olds), len(news)) if parent else 0
        for (bk, b), (nk, n) in zip(olds[:pairs], news[:pairs], strict=True):
            rows.append(_tree_row((bk, nk), REPLACED, b, n, sides))
        rows += [_tree_row((k, k), GONE, b, None, sides) for k, b in olds[pairs:]]
        rows += [_tree_row((k, k), NEW, None, n, sides) for k, n in news[pairs:]]
    return by_impact(rows)


def _by_parent(aggs: dict[PathKey, Agg]) -> dict[str, list[tuple[PathKey, Agg]]]:
    out: dict[str, list[tuple[PathKey, Agg]]] = {}
    for key, agg in sorted(aggs.items(), key=lambda kv: -kv[1].self_ns):
        out.setdefault(key[0], []).append((key, agg))
    return out


def _tree_row(
    keys: tuple[PathKey, PathKey], match: str, base: Agg | None, new: Agg | None, sides: tuple[Side, Side]
) -> dict[str, Any]:
    (parent, name), new_name = keys[0], keys[1][1]
    head = {"parent": parent, "name": name, "new_name": new_name, "match": match}
    return {**head, **figures(base, new, sides)}


def _merge_all(parts: Iterable[dict[Any, Agg]]) -> dict[Any, Agg]:
    out: dict[Any, Agg] = {}
    for part in parts:
        for key, agg in part.items():
            out[key] = out[key].merged(agg) if key in out else agg
    return out


def compare_ops(base: dict[str, Agg], new: dict[str, Agg], sides: tuple[Side, Side]) -> list[dict[str, Any]]:
    """Ops matched by name."""
    rows = [
        {"name": k, "match": _presence(k, base, new), **figures(base.get(k), new.get(k), sides)} for k in base | new
    ]
    return by_impact(rows)


def _presence(key: Any, base: dict[Any, Agg], new: dict[Any, Agg]) -> str:
    return MATCHED if key in base and key in new else (GONE if key in base else NEW)


def compare_op_shapes(
    base: dict[tuple[str, str], Agg], new: dict[tuple[str, str], Agg], sides: tuple[Side, Side]
) -> list[dict[str, Any]]:
    """Ops matched by (name, shape); those left over matched by name as ``reshaped``."""
    rows = []
    for key in base.keys() & new.keys():
        rows.append(
            {
                "name": key[0],
                "shape": key[1],
                "new_shape": key[1],
                "match": MATCHED,
                **figures(base[key], new[key], sides),
            }
        )
    left_base = _by_name({k: v for k, v in base.items() if k not in new})
    left_new = _by_name({k: v for k, v in new.items() if k not in base})
    for name in left_base | left_new:
        b, n = left_base.get(name), left_new.get(name)
        rows.append(
            {
                "name": name,
                "shape": _shapes_text(b),
                "new_shape": _shapes_text(n),
                "match": RESHAPED if b and n else (GONE if b else NEW),
                **figures(_sum(b), _sum(n), sides),
            }
        )
    return by_impact(rows)


def _by_name(aggs: dict[tuple[str, str], Agg]) -> dict[str, dict[str, Agg]]:
    out: dict[str, dict[str, Agg]] = {}
    for (name, shape), agg in aggs.items():
        out.setdefault(name, {})[shape] = agg
    return out


def _sum(shapes: dict[str, Agg] | None) -> Agg | None:
    if not shapes:
        return None
    aggs = list(shapes.values())
    total = aggs[0]
    for agg in aggs[1:]:
        total = total.merged(agg)
    return total


def _shapes_text(shapes: dict[str, Agg] | None, most: int = 3) -> str:
    if not shapes:
        return ""
    ordered = sorted(shapes.items(), key=lambda kv: -kv[1].self_ns)
    more = f" (+{len(ordered) - most} more)" if len(ordered) > most else ""
    return "; ".join(shape for shape, _ in ordered[:most]) + more


# ---- kernels ------------------------------------------------------------------------------------


def kernel_aggregates(events: pa.Table, side: Side) -> dict[KernelKey, Agg]:
    """Device work by (launching op's name, kernel name, kind): calls and device time."""
    work = device.device_work(events)
    name_code, names = codes(events, "name")
    at = id_positions(events, ints(work, "op_id"))
    op = (np.where(at >= 0, name_code[np.maximum(at, 0)], len(names)), [*names, ""])  # "": outside any op
    durations = ints(work, "dur_ns")
    columns = [op, coded(work, "name"), coded(work, "kind")]
    return aggregate(columns, side.step_index(ints(work, "step")), durations, durations, len(side.step_numbers))


def compare_kernels(
    base: dict[KernelKey, Agg], new: dict[KernelKey, Agg], sides: tuple[Side, Side]
) -> list[dict[str, Any]]:
    """Kernels matched by name within their launching op; under one op, what is gone and what is new
    pair up, most time first, as ``replaced`` (not for work launched outside any op)."""
    rows = [_kernel_row((k, k), MATCHED, base[k], new[k], sides) for k in base.keys() & new.keys()]
    gone = _by_op({k: v for k, v in base.items() if k not in new})
    added = _by_op({k: v for k, v in new.items() if k not in base})
    for op in gone | added:
        olds, news = gone.get(op, []), added.get(op, [])
        pairs = min(len(olds), len(news)) if op else 0
        for (bk, b), (nk, n) in zip(olds[:pairs], news[:pairs], strict=True):
            rows.append(_kernel_row((bk, nk), REPLACED, b, n, sides))
        rows += [_kernel_row((k, k), GONE, b, None, sides) for k, b in olds[pairs:]]
        rows += [_kernel_row((k, k), NEW, None, n, sides) for k, n in news[pairs:]]
    return by_impact(rows)


def _by_op(aggs: dict[KernelKey, Agg]) -> dict[str, list[tuple[KernelKey, Agg]]]:
    out: dict[str, list[tuple[KernelKey, Agg]]] = {}
    for key, agg in sorted(aggs.items(), key=lambda kv: -kv[1].total_ns):
        out.setdefault(key[0], []).append((key, agg))
    return out


def _kernel_row(
    keys: tuple[KernelKey, KernelKey],
    match: str,
    base: Agg | None,
    new: Agg | None,
    sides: tuple[Side, Side],
) -> dict[str, Any]:
    numbers = figures(base, new, sides)
    for label in ("base", "new"):  # a kernel's own time is its whole duration
        numbers[f"{label}_time_per_step_ns"] = numbers.pop(f"{label}_self_per_step_ns")
        numbers.pop(f"{label}_total_per_step_ns")
    (op, name, kind), new_name = keys[0], keys[1][1]
    head = {"op": op, "name": name, "new_name": new_name, "kind": kind, "match": match}
    return {**head, **numbers}


# ---- modules and categories -------------------------------------------------------------------


def module_aggregates(events: pa.Table, side: Side) -> dict[str, Agg]:
    """Self time of the counted ops by their nearest ``nn.Module:`` frame (``with_stack=True``)."""
    parts = []
    for kept, self_ns in _counted_ops(events, side, with_path=True):
        idx = side.step_index(ints(kept, "step"))
        parts.append(aggregate([coded(kept, "op_module")], idx, ints(kept, "dur_ns"), self_ns, len(side.step_numbers)))
    return _merge_all(parts)


def _device_by(table: pa.Table, key: str, column: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, value in zip(strings(table, key), ints(table, column).tolist(), strict=True):
        out[name] = out.get(name, 0) + value
    return out


def compare_modules(sides: tuple[Side, Side]) -> list[dict[str, Any]]:
    """Per module: op self time per step (with its noise) and device time per step (``gpu_time_by_module``)."""
    host_time = [module_aggregates(s.events, s) for s in sides]
    device_ns = [
        _device_by(attribution.gpu_time_by_module({"events": s.events}, TopOptions(top=1 << 30)), "module", "gpu_ns")
        for s in sides
    ]
    rows = []
    for module in host_time[0].keys() | host_time[1].keys() | device_ns[0].keys() | device_ns[1].keys():
        row = {"module": module, **figures(host_time[0].get(module), host_time[1].get(module), sides)}
        rows.append({**row, **_device_figures(device_ns[0].get(module), device_ns[1].get(module), sides)})
    return _by_either_impact(rows)


def _device_figures(base_ns: float | None, new_ns: float | None, sides: tuple[Side, Side]) -> dict[str, Any]:
    b, n = (v / s.per_step_divisor if v is not None else 0.0 for v, s in zip((base_ns, new_ns), sides, strict=True))
    return {"base_gpu_per_step_ns": b, "new_gpu_per_step_ns": n, "delta_gpu_per_step_ns": n - b}


def _by_either_impact(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: -max(abs(r["delta_per_step_ns"]), abs(r["delta_gpu_per_step_ns"])))


def compare_categories(sides: tuple[Side, Side]) -> list[dict[str, Any]]:
    """Per op category (``time_by_category``): device time and op self time per step, means only
    (no step-to-step spread: ``significant`` is null)."""
    found = [attribution.time_by_category({"events": s.events}) for s in sides]
    device_ns = [_device_by(t, "category", "gpu_ns") for t in found]
    self_ns = [_device_by(t, "category", "op_self_ns") for t in found]
    rows = []
    for category in device_ns[0].keys() | device_ns[1].keys():
        b, n = (self_ns[i].get(category, 0) / sides[i].per_step_divisor for i in (0, 1))
        rows.append(
            {
                "category": category,
                "base_self_per_step_ns": b,
                "new_self_per_step_ns": n,
                "delta_per_step_ns": n - b,
                "delta_pct": delta_pct(b, n),
                "noise_per_step_ns": None,
                "significant": None,
                **_device_figures(device_ns[0].get(category), device_ns[1].get(category), sides),
            }
        )
    return _by_either_impact(rows)


# ---- step times and run figures -----------------------------------------------------------------


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
    temporal = {r["rank"]: r for r in device.temporal_breakdown(tables).to_pylist()}
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


# ---- the report ---------------------------------------------------------------------------------


@dataclass
class Run:
    """One side as loaded: its tables and how the report names it."""

    label: str
    tables: Tables
    durations: dict[int, dict[int, int]] = field(default_factory=dict)  # rank -> step -> ns

    def __post_init__(self) -> None:
        self.durations = {rank: steps.step_durations(ev) for (_, rank), ev in per_rank(self.tables["events"])}

    @property
    def ranks(self) -> list[int]:
        return sorted(self.durations)

    @cached_property
    def digest(self) -> dict[str, Any]:
        """What the verdict, the comparability check and the waterfall need (``compare_verdict``)."""
        return compare_verdict.digest(self.tables, self.label)

    @cached_property
    def figures_by_rank(self) -> dict[int, dict[str, float | None]]:
        return rank_figures(self.tables)

    def memory_tables(self, rank: int | None) -> Tables:
        """The allocations (memory snapshots) of ``rank`` (all ranks: None) and the frames naming their stacks."""
        allocs = self.tables.get("allocations")
        if allocs is None:
            allocs = pa.table({"run": pa.array([], pa.string()), "rank": pa.array([], pa.int32())})
        elif rank is not None:
            allocs = where(allocs, ints(allocs, "rank") == rank)
        return {"allocations": allocs, "frames": self.tables.get("frames", pa.table({}))}

    def rank_events(self, rank: int | None) -> pa.Table:
        events = self.tables["events"]
        return events if rank is None else where(events, ints(events, "rank") == rank)

    def step_times_ns(self, rank: int | None) -> dict[int, int]:
        """Step -> duration on ``rank``; for the whole run, the slowest rank's (a step ends when its last rank does)."""
        if rank is not None:
            return self.durations.get(rank, {})
        out: dict[int, int] = {}
        for by_step in self.durations.values():
            for number, ns in by_step.items():
                out[number] = max(out.get(number, 0), ns)
        return out


def compare_scope(base: Run, new: Run, rank: int | None, top: int) -> dict[str, Any]:
    """Everything compared for one rank, or for the whole run (``rank`` None)."""
    sides = tuple(
        make_side(run.rank_events(rank), run.step_times_ns(rank), 1 if rank is not None else len(run.ranks))
        for run in (base, new)
    )
    pair = (sides[0], sides[1])
    ops = compare_ops(
        op_aggregates(pair[0].events, pair[0], False), op_aggregates(pair[1].events, pair[1], False), pair
    )
    shapes = compare_op_shapes(
        op_aggregates(pair[0].events, pair[0], True), op_aggregates(pair[1].events, pair[1], True), pair
    )
    kernels = compare_kernels(
        kernel_aggregates(pair[0].events, pair[0]), kernel_aggregates(pair[1].events, pair[1]), pair
    )
    tree = compare_op_tree(
        op_path_aggregates(pair[0].events, pair[0]), op_path_aggregates(pair[1].events, pair[1]), pair
    )
    modules, categories = compare_modules(pair), compare_categories(pair)
    return {
        "rank": ALL_RANKS if rank is None else rank,
        "step_time": step_comparison(list(base.step_times_ns(rank).values()), list(new.step_times_ns(rank).values())),
        "figures": compare_figures(*(_scope_figures(run, rank) for run in (base, new))),
        "ops": _top(ops, top),
        "op_shapes": _top(shapes, top),
        "kernels": _top(kernels, top),
        "op_tree": _top(tree, top),
        "modules": _top(modules, top),
        "categories": _top(categories, top),
        "memory": allocation_diff.compare_allocations(base.memory_tables(rank), new.memory_tables(rank), top),
        "unmatched": {**unmatched(ops, kernels), **unmatched_in_tree(tree)},
        "rows_total": {
            "ops": len(ops),
            "op_shapes": len(shapes),
            "kernels": len(kernels),
            "op_tree": len(tree),
            "modules": len(modules),
            "categories": len(categories),
        },
    }


def unmatched_in_tree(tree: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Places in the op tree with no counterpart (``parent / name``), most impact first."""

    def place(r: dict[str, Any]) -> str:
        return f"{r['parent']}{op_paths.SEPARATOR}{r['name']}" if r["parent"] else str(r["name"])

    return {
        "op_tree_gone": [place(r) for r in tree if r["match"] == GONE],
        "op_tree_new": [place(r) for r in tree if r["match"] == NEW],
    }


def _scope_figures(run: Run, rank: int | None) -> dict[str, float | None]:
    figures_by_rank = run.figures_by_rank
    if rank is not None:
        return figures_by_rank.get(rank, {})
    return combined_figures(figures_by_rank.values())


def _top(rows: list[dict[str, Any]], top: int) -> list[dict[str, Any]]:
    return rows if top <= 0 else rows[:top]


def unmatched(ops: list[dict[str, Any]], kernels: list[dict[str, Any]]) -> dict[str, Any]:
    """What matched nothing on the other side (all of it), most impact first."""

    def pick(rows: list[dict[str, Any]], match: str, name: Callable[[dict[str, Any]], str]) -> list[str]:
        return [name(r) for r in rows if r["match"] == match]

    def kernel(r: dict[str, Any]) -> str:
        return f"{r['op'] or '(no op)'} / {r['name']}"

    return {
        "ops_gone": pick(ops, GONE, lambda r: str(r["name"])),
        "ops_new": pick(ops, NEW, lambda r: str(r["name"])),
        "kernels_gone": pick(kernels, GONE, kernel),
        "kernels_new": pick(kernels, NEW, kernel),
    }


def compare_runs(
    base: Run,
    new: Run,
    *,
    top: int = 20,
    threshold_pct: float = compare_verdict.DEFAULT_THRESHOLD_PCT,
    level: float = significance.DEFAULT_LEVEL,
) -> dict[str, Any]:
    """The whole report: the verdict, the comparability check and the waterfall, then the run, then
    each rank when there are several; ranks on one side only are said."""
    common = [r for r in base.ranks if r in new.ranks]
    scopes = [compare_scope(base, new, None, top)]
    per_rank_too = len(base.ranks) > 1 or len(new.ranks) > 1
    if per_rank_too:
        scopes += [compare_scope(base, new, rank, top) for rank in common]
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "base": _describe(base),
        "new": _describe(new),
        **compare_verdict.answer(base.digest, new.digest, threshold_pct, level=level),
        "ranks_only_in_base": [r for r in base.ranks if r not in new.ranks] if per_rank_too else [],
        "ranks_only_in_new": [r for r in new.ranks if r not in base.ranks] if per_rank_too else [],
        "scopes": scopes,
    }


def _describe(run: Run) -> dict[str, Any]:
    return {"label": run.label, "ranks": run.ranks, "steps": len(run.step_times_ns(None))}


def compare_digests(
    base: dict[str, Any],
    new: dict[str, Any],
    *,
    top: int = 20,
    threshold_pct: float = compare_verdict.DEFAULT_THRESHOLD_PCT,
    level: float = significance.DEFAULT_LEVEL,
) -> dict[str, Any]:
    """The report of a side known only by its digest (a saved baseline): the verdict, the
    comparability check, the waterfall and the step times; no per-op tables (``scopes`` holds the
    whole run's step time only)."""
    base_ns, new_ns = base["steps"]["step_ns"], new["steps"]["step_ns"]
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "base": {"label": base["label"], "ranks": base["ranks"], "steps": len(base_ns)},
        "new": {"label": new["label"], "ranks": new["ranks"], "steps": len(new_ns)},
        **compare_verdict.answer(base, new, threshold_pct, min(top, 5) if top > 0 else 5, level),
        "ranks_only_in_base": [],
        "ranks_only_in_new": [],
        "scopes": [{"rank": ALL_RANKS, "step_time": step_comparison(base_ns, new_ns)}],
    }


def slower_pct(report: dict[str, Any]) -> float | None:
    """How much slower NEW's median step time is than BASE's, in percent (negative: faster); None without steps."""
    value = report["scopes"][0]["step_time"]["delta_pct"]
    return None if value is None else float(value)


__all__ = ["SCHEMA", "SCHEMA_VERSION", "Run", "compare_digests", "compare_runs", "slower_pct"]

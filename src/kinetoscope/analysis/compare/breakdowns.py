"""What changed between two runs, per op, per op and input shape, per kernel (within its launching
op), per nn.Module and per category, as time per step, sorted by impact on step time.

Ops match by name and input shape (``Input Dims`` and ``Input type`` of ``record_shapes``), and
ops whose shape changed match by name (``reshaped``); kernels match by name within their
launching op, and a kernel gone under an op where a new one appeared is shown as ``replaced``.
What matches nothing is ``gone`` or ``new``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables.column_arrays import codes, ints, strings
from kinetoscope.analysis._tables.id_lookup import id_positions
from kinetoscope.analysis.compare.aggregates import (
    GONE,
    MATCHED,
    NEW,
    REPLACED,
    RESHAPED,
    Agg,
    Coded,
    KernelKey,
    Side,
    aggregate,
    by_impact,
    coded,
    delta_pct,
    figures,
    keyed,
    merge_all,
    presence,
)
from kinetoscope.analysis.compare.op_tree import counted_ops
from kinetoscope.analysis.device import device_time
from kinetoscope.analysis.ops import attribution, shapes
from kinetoscope.analysis.settings.options import TopOptions


def op_aggregates(events: pa.Table, side: Side, with_shape: bool) -> dict[Any, Agg]:
    """Counted ops (``key_averages`` rules) of every rank, by name or by (name, shape)."""
    parts: list[dict[Any, Agg]] = []
    for kept, self_ns in counted_ops(events, side):
        columns = [coded(kept, "name"), *([shape_codes(kept)] if with_shape else [])]
        idx = side.step_index(ints(kept, "step"))
        parts.append(aggregate(columns, idx, ints(kept, "dur_ns"), self_ns, len(side.step_numbers)))
    return merge_all(parts)


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


def compare_ops(base: dict[str, Agg], new: dict[str, Agg], sides: tuple[Side, Side]) -> list[dict[str, Any]]:
    """Ops matched by name."""
    rows = [
        {"name": k, "match": presence(k, base, new), **figures(base.get(k), new.get(k), sides)} for k in base | new
    ]
    return by_impact(rows)


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


def kernel_aggregates(events: pa.Table, side: Side) -> dict[KernelKey, Agg]:
    """Device work by (launching op's name, kernel name, kind): calls and device time."""
    work = device_time.device_work(events)
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


def module_aggregates(events: pa.Table, side: Side) -> dict[str, Agg]:
    """Self time of the counted ops by their nearest ``nn.Module:`` frame (``with_stack=True``)."""
    parts = []
    for kept, self_ns in counted_ops(events, side, with_path=True):
        idx = side.step_index(ints(kept, "step"))
        parts.append(aggregate([coded(kept, "op_module")], idx, ints(kept, "dur_ns"), self_ns, len(side.step_numbers)))
    return merge_all(parts)


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

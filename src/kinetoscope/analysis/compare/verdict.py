"""The one answer of a diff: a verdict with its confidence, whether the two runs compare at all,
and a waterfall that splits the step-time change into parts that add up.

Everything here reads a side's *digest* (``digest``): a plain, JSON-able dict of what the verdict,
the comparability check and the waterfall need (per-step times and their parts, the facts that
make two runs comparable, and per-step time by op, shape, module and kernel). A saved baseline is
a digest (``analysis.baselines``), so a diff against it needs no trace.

* **Steps** are the model's iterations (``analysis.time.steady_state.iterations``): ``ProfilerStep#N``, else
  the outermost annotation repeated most, else from one call of the outermost op or annotation
  (Python frames aside) repeated the fewest times (more than ``steady_state.MIN_REPEATS``) to the
  next, else none, and the digest says so; two sides whose steps were found differently do not
  compare. For the whole run a step's time is its slowest rank's.
* **Parts of a step** (``PARTS``), on that rank, nanosecond by nanosecond, summing to the step:
  device compute; communication not hidden by compute; memory work hidden by neither; device idle
  between device work split as the idle analysis does (``analysis.gaps``: host-bound, sync,
  launch, other); and host-only time (the step's time with no device work before or after it in
  the trace: a CPU run, a data-loader stall at the start of the trace).
* **Verdict** (``verdict``): ``model.significance``'s rank test over both sides' step times, and
  the Hodges-Lehmann shift against the base median. ``regression``/``improvement`` when the change
  is significant and beyond the threshold (``DEFAULT_THRESHOLD_PCT`` of the step); ``neutral``
  when not significant or within it; ``inconclusive`` when steps are missing or too few, or when
  the runs do not compare (``comparability``), naming what is missing.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables import intervals
from kinetoscope.analysis._tables.column_arrays import codes, ints
from kinetoscope.analysis._tables.masks import is_in, starts_with
from kinetoscope.analysis._tables.rank_slices import per_rank
from kinetoscope.analysis._tables.selection import where
from kinetoscope.analysis.device import device_time, gaps
from kinetoscope.analysis.settings.options import DEFAULT_IDLE
from kinetoscope.analysis.time import steady_state
from kinetoscope.model import blocking, compilation, graphs, kinds, significance

DIGEST_SCHEMA = "kinetoscope.diff_digest"
DIGEST_VERSION = 2  # 2: host collectives behind host parts; DataLoader idle is host-bound
DEFAULT_THRESHOLD_PCT = 2.0
REGRESSION, IMPROVEMENT, NEUTRAL, INCONCLUSIVE = "regression", "improvement", "neutral", "inconclusive"
PARTS = (
    "device_compute",
    "exposed_communication",
    "memory",
    "idle_host_bound",
    "idle_sync",
    "idle_launch",
    "idle_other",
    "host_only",
)
_GAP_PART = {
    "host_wait": "idle_host_bound",
    "sync": "idle_sync",
    "launch_latency": "idle_launch",
    "other": "idle_other",
}
# the evidence behind each part: (what, kernel type) for device parts; host parts read host work
DEVICE_PARTS = {"device_compute": 0, "exposed_communication": 1, "memory": 2}
HOST_PARTS = ("idle_host_bound", "idle_launch", "idle_other", "host_only")
DROPPED_BREAKS_PCT = 1.0  # dropped events beyond this share of a side's events break the comparison
TOP_SHAPES = 5  # the top ops (by self time) whose shapes are compared
EVIDENCE_ROWS = 200  # per kind of evidence kept in a digest, most time first
BEHIND_MIN_PCT = 0.2  # what moved less than this share of BASE's mean step is not named behind a part


# ---- steps ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Steps:
    """One rank's steps: where they come from, and each one's number, start and end."""

    source: str  # "ProfilerStep", an annotation's or op's name; "" when none
    numbers: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray


def rank_steps(events: pa.Table) -> Steps:
    """The model's iterations of one rank; else the outermost op or annotation repeated the fewest
    times (at least ``steady_state.MIN_REPEATS`` + 1; ties: most total time), each step running from one of its
    starts to the next (the coarsest repeated unit: once per iteration); else none."""
    found = steady_state.iterations(events)
    if found is not None and len(found.start_ns):
        return Steps(found.source, found.numbers, found.start_ns, found.end_ns)
    outer = _outermost(where(events, is_in(events, "kind", kinds.OP_KINDS)))
    code, names = codes(outer, "name")
    counts = np.bincount(code, minlength=len(names))
    totals = np.bincount(code, ints(outer, "dur_ns"), minlength=len(names))
    repeated = np.flatnonzero(counts > steady_state.MIN_REPEATS)
    if not len(repeated):
        return Steps("", np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64))
    top = int(min(repeated.tolist(), key=lambda c: (int(counts[c]), -float(totals[c]))))
    starts = np.sort(ints(outer, "ts_ns")[code == top])
    return Steps(f"{names[top]} to the next", np.arange(len(starts) - 1), starts[:-1], starts[1:])


def _outermost(ops: pa.Table) -> pa.Table:
    """The ops and annotations inside no other on their thread (Python frames around them aside)."""
    tid, start = ints(ops, "tid"), ints(ops, "ts_ns")
    order = np.lexsort((-ints(ops, "dur_ns"), start, tid))
    t, s0 = tid[order], start[order]
    e = s0 + ints(ops, "dur_ns")[order]
    keep = np.ones(len(order), bool)
    for thread in np.unique(t).tolist():
        rows = np.flatnonzero(t == thread)
        reach = np.maximum.accumulate(e[rows])
        keep[rows[1:]] = s0[rows[1:]] >= reach[:-1]
    return ops.take(pa.array(np.sort(order[keep]), pa.int64()))


# ---- the parts of each step -----------------------------------------------------------------


def _overlap(starts: np.ndarray, ends: np.ndarray, w0: int, w1: int) -> float:
    """Time of the disjoint intervals inside [w0, w1)."""
    return float((np.clip(ends, w0, w1) - np.clip(starts, w0, w1)).sum())


def step_parts(events: pa.Table, found: Steps) -> dict[str, np.ndarray]:
    """Per step of one rank, the ns of each of ``PARTS``; they sum to the step's duration."""
    n = len(found.start_ns)
    out = {part: np.zeros(n) for part in PARTS}
    work = device_time.device_work(events)
    types = device_time.kernel_types(work)
    w_start = ints(work, "ts_ns")
    w_end = w_start + ints(work, "dur_ns")
    comp = intervals.merge(w_start[types == 0], w_end[types == 0])
    with_comm = intervals.merge(w_start[types <= 1], w_end[types <= 1])
    busy = intervals.merge(w_start, w_end)
    timeline = _device_timeline(events)
    for i, (w0, w1) in enumerate(zip(found.start_ns.tolist(), found.end_ns.tolist(), strict=True)):
        compute, both, all_work = (_overlap(*s, w0, w1) for s in (comp, with_comm, busy))
        out["device_compute"][i] = compute
        out["exposed_communication"][i] = both - compute
        out["memory"][i] = all_work - both
        idle = (w1 - w0) - all_work
        in_gaps = 0.0
        if timeline is not None and len(timeline.gap_start_ns):
            g0, g1 = timeline.gap_start_ns, timeline.gap_end_ns
            share = (np.clip(g1, w0, w1) - np.clip(g0, w0, w1)) / np.maximum(g1 - g0, 1)
            for name, part in _GAP_PART.items():
                value = float((timeline.split_ns[name] * share).sum())
                out[part][i] = value
                in_gaps += value
        out["host_only"][i] = idle - in_gaps
    return out


def _device_timeline(events: pa.Table) -> gaps.Timeline | None:
    """The rank's device work as one timeline (every device and stream merged), with its gaps split."""
    work = gaps.rank_work(events)
    if not len(work.ids):
        return None
    merged = dataclasses.replace(work, device=np.zeros_like(work.device), stream=np.full_like(work.stream, -1))
    latency_max_ns = DEFAULT_IDLE.launch_latency_max_ns
    found = list(gaps.timelines(merged, gaps.blocked(events), latency_max_ns, gaps.loading(events)))
    return found[-1] if found else None


# ---- a side's digest ------------------------------------------------------------------------


def digest(tables: Mapping[str, pa.Table], label: str) -> dict[str, Any]:
    """What the verdict, the comparability check and the waterfall need of one side."""
    events = tables["events"]
    by_step: dict[int, tuple[float, int, dict[str, float]]] = {}  # number -> (ns, rank, parts)
    sources: dict[int, str] = {}
    for (_, rank), rank_events in per_rank(events):
        found = rank_steps(rank_events)
        sources[rank] = found.source
        parts = step_parts(rank_events, found)
        for i, number in enumerate(found.numbers.tolist()):
            ns = float(found.end_ns[i] - found.start_ns[i])
            if number not in by_step or ns > by_step[number][0]:
                by_step[number] = (ns, rank, {p: float(parts[p][i]) for p in PARTS})
    numbers = sorted(by_step)
    ranks = sorted(sources)
    return {
        "schema": DIGEST_SCHEMA,
        "version": DIGEST_VERSION,
        "label": label,
        "ranks": ranks,
        "steps": {
            "source": sorted({s for s in sources.values() if s}),
            "ranks_without": [r for r in ranks if not sources[r]],
            "numbers": numbers,
            "step_ns": [by_step[n][0] for n in numbers],
            "parts_ns": {p: [by_step[n][2][p] for n in numbers] for p in PARTS},
        },
        "facts": facts(tables),
        "evidence": evidence(tables, max(len(numbers), 1) * max(len(ranks), 1)),
    }


def facts(tables: Mapping[str, pa.Table]) -> dict[str, Any]:
    """What makes two runs comparable: devices, world size, compile and graph state, dropped events,
    and the shapes of the top ops."""
    events = tables["events"]
    sessions = tables.get("sessions", pa.table({}))
    names = set(codes(events, "name")[1])
    ops = where(events, is_in(events, "kind", (kinds.OP,)))
    return {
        "devices": sorted({d for d in _column(sessions, "device_name") if d}),
        "world_size": max([int(w) for w in _column(sessions, "world_size") if w] or [len(set(ints(events, "rank")))]),
        "compiled": any(n.startswith(compilation.COMPILED_REGIONS) for n in names),
        "cuda_graphs": any(re.match(graphs.LAUNCH_PATTERN, n) for n in names),
        "events": int(sum(int(v or 0) for v in _column(sessions, "event_count"))) or events.num_rows,
        "dropped_events": int(sum(int(v or 0) for v in _column(sessions, "dropped_events"))),
        "top_op_shapes": _top_shapes(ops),
    }


def _column(table: pa.Table, name: str) -> list[Any]:
    return table.column(name).to_pylist() if name in table.column_names else []


def _top_shapes(ops: pa.Table) -> dict[str, list[str]]:
    """The ``TOP_SHAPES`` ops with most self time, and the input shapes each was called with."""
    if not ops.num_rows or "args" not in ops.column_names:
        return {}
    totals = _coded_sums(ops, "name", ints(ops, "self_ns"), 1)
    top = sorted(totals, key=lambda k: -totals[k])[:TOP_SHAPES]
    picked = where(ops, is_in(ops, "name", tuple(top)))
    keys = _named_shapes(picked)
    out: dict[str, set[str]] = {name: set() for name in top}
    for name, dims in keys:
        if dims:
            out[name].add(dims)
    return {name: sorted(found_dims) for name, found_dims in out.items()}


def _named_shapes(ops: pa.Table, ns: np.ndarray | None = None) -> dict[tuple[str, str], float]:
    """(name, input dims) -> the sum of ``ns`` over the rows (their count without ``ns``); no Python per row."""
    from kinetoscope.analysis.ops import shapes

    found = shapes.input_shapes(ops.select(shapes.source_columns(ops)))
    name_code, names = codes(ops, "name")
    dims_code, dims = codes(found, "input_dims")
    composite = name_code.astype(np.int64) * (len(dims) + 1) + dims_code
    distinct, first, inverse = np.unique(composite, return_index=True, return_inverse=True)
    weights = np.ones(len(composite)) if ns is None else ns.astype(np.float64)
    totals = np.bincount(inverse.reshape(-1), weights=weights, minlength=len(distinct))
    out: dict[tuple[str, str], float] = {}
    for i, row in enumerate(first.tolist()):
        text = dims[dims_code[row]]
        key = (names[name_code[row]], "" if text == "None" else text)
        out[key] = out.get(key, 0.0) + float(totals[i])
    return out


def evidence(tables: Mapping[str, pa.Table], divisor: int) -> dict[str, dict[str, float]]:
    """Time per step (per rank) by kernel of each type, by op, by op shape, by module, by sync call
    and by host collective (``gloo:all_reduce``, ``nccl:all_reduce``: its whole time, the wait for
    the other ranks included)."""
    events = tables["events"]
    out: dict[str, dict[str, float]] = {}
    work = device_time.device_work(events)
    types = device_time.kernel_types(work)
    for kind, code in DEVICE_PARTS.items():
        picked = where(work, types == code)
        out[f"kernels:{kind}"] = _top(_coded_sums(picked, "name", ints(picked, "dur_ns"), divisor))
    ops = where(events, is_in(events, "kind", kinds.OP_KINDS) & ~starts_with(events, "name", steady_state.STEP_PREFIX))
    out["ops"] = _top(_coded_sums(ops, "name", ints(ops, "self_ns"), divisor))
    if "args" in ops.column_names and ops.num_rows:
        by_shape = _named_shapes(ops, ints(ops, "self_ns"))
        out["shapes"] = _top({f"{name} {dims}": ns / divisor for (name, dims), ns in by_shape.items() if dims})
    frames = where(events, is_in(events, "kind", (kinds.PYTHON,)) & starts_with(events, "name", "nn.Module: "))
    out["modules"] = _top(_coded_sums(frames, "name", ints(frames, "dur_ns"), divisor))
    sync = is_in(events, "kind", (kinds.SYNC,)) | (
        is_in(events, "kind", (kinds.RUNTIME_CALL,)) & is_in(events, "name", blocking.SYNC_CALLS)
    )
    picked = where(events, sync)
    out["sync_calls"] = _top(_coded_sums(picked, "name", ints(picked, "dur_ns"), divisor))
    collectives = where(events, is_in(events, "kind", (kinds.COLLECTIVE,)))  # host rows: the kind says so
    out["collectives"] = _top(_coded_sums(collectives, "name", ints(collectives, "dur_ns"), divisor))
    return out


def _coded_sums(table: pa.Table, column: str, ns: np.ndarray, divisor: int) -> dict[str, float]:
    """Per distinct value of ``column``: the sum of ``ns`` over its rows, divided by ``divisor``."""
    if not table.num_rows:
        return {}
    code, values = codes(table, column)
    totals = np.bincount(code, weights=ns.astype(np.float64), minlength=len(values))
    counts = np.bincount(code, minlength=len(values))
    out: dict[str, float] = {}
    for i in np.flatnonzero(counts).tolist():
        out[values[i]] = out.get(values[i], 0.0) + float(totals[i]) / divisor
    return out


def _top(sums: dict[str, float]) -> dict[str, float]:
    return dict(sorted(sums.items(), key=lambda kv: -kv[1])[:EVIDENCE_ROWS])


# ---- comparability --------------------------------------------------------------------------


def comparability(base: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Each fact that differs, and whether it breaks the comparison; ``comparable`` overall."""
    b, n = base["facts"], new["facts"]
    checks: list[dict[str, Any]] = []

    def check(name: str, bv: Any, nv: Any, breaks: bool, why: str) -> None:
        checks.append(
            {
                "check": name,
                "base": bv,
                "new": nv,
                "differs": bv != nv,
                "breaks": bv != nv and breaks,
                "why": why if bv != nv else "",
            }
        )

    check(
        "devices",
        b["devices"],
        n["devices"],
        bool(b["devices"] and n["devices"]),
        "different devices: a change of hardware, not of the code",
    )
    check("world_size", b["world_size"], n["world_size"], True, "different world sizes: the step does different work")
    check(
        "steps",
        len(base["steps"]["numbers"]),
        len(new["steps"]["numbers"]),
        False,
        "different step counts: compared per step",
    )
    check(
        "ranks",
        base["ranks"],
        new["ranks"],
        True,
        "other ranks traced: a whole-run step is its slowest rank's, and a missing rank may be that one",
    )
    check(
        "step_source",
        base["steps"]["source"],
        new["steps"]["source"],
        True,
        "steps found differently on the two sides: their times do not compare",
    )
    check("compiled", b["compiled"], n["compiled"], False, "torch.compile on one side only (the change under test?)")
    check("cuda_graphs", b["cuda_graphs"], n["cuda_graphs"], False, "CUDA graphs on one side only")
    check(
        "top_op_shapes",
        b["top_op_shapes"],
        n["top_op_shapes"],
        False,
        "the top ops ran on other shapes: a change of batch or model is compared",
    )
    for label, side in (("base", b), ("new", n)):
        share = 100.0 * side["dropped_events"] / max(side["events"] + side["dropped_events"], 1)  # of all recorded
        checks.append(
            {
                "check": f"dropped_events_{label}",
                "base": b["dropped_events"] if label == "base" else None,
                "new": n["dropped_events"] if label == "new" else None,
                "differs": share > 0,
                "breaks": share > DROPPED_BREAKS_PCT,
                "why": f"{label.upper()} lost {share:.1f}% of its events" if share > 0 else "",
            }
        )
    return {"comparable": not any(c["breaks"] for c in checks), "checks": checks}


# ---- the verdict ----------------------------------------------------------------------------


def verdict(
    base: dict[str, Any],
    new: dict[str, Any],
    checked: dict[str, Any],
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
    level: float = significance.DEFAULT_LEVEL,
) -> dict[str, Any]:
    """``regression``, ``improvement``, ``neutral`` or ``inconclusive``, with the confidence, the
    change (Hodges-Lehmann shift of step time) and why; ``level``: the confidence a change must reach."""
    b_ns, n_ns = base["steps"]["step_ns"], new["steps"]["step_ns"]
    test = significance.per_step_change(b_ns, n_ns, level)
    out: dict[str, Any] = {
        "threshold_pct": threshold_pct,
        "change_pct": None if test.effect_pct is None else round(test.effect_pct, 3),
        "change_ns": test.effect,
        "confidence": None if test.confidence is None else round(test.confidence, 6),
        "base_steps": len(b_ns),
        "new_steps": len(n_ns),
        "step_source": {"base": base["steps"]["source"], "new": new["steps"]["source"]},
        "missing": [],
        "test": test.to_json(),
    }
    missing = [
        f"{label.upper()} has no ProfilerStep and no repeated top-level op or annotation: no steps"
        for label, side in (("base", base), ("new", new))
        if not side["steps"]["numbers"]
    ]
    missing += [f"not comparable: {c['why']}" for c in checked["checks"] if c["breaks"]]
    if not missing and test.verdict == significance.INCONCLUSIVE:
        missing.append(test.reason)
    if missing:
        return {"verdict": INCONCLUSIVE, **out, "missing": missing, "reason": "; ".join(missing)}
    change = out["change_pct"] or 0.0
    if not test.significant:
        return {"verdict": NEUTRAL, **out, "reason": f"not significant: {test.reason}"}
    if abs(change) < threshold_pct:
        return {
            "verdict": NEUTRAL,
            **out,
            "reason": f"{change:+.2f}% is within the {threshold_pct:g}% threshold ({test.reason})",
        }
    name = REGRESSION if change > 0 else IMPROVEMENT
    return {"verdict": name, **out, "reason": f"step time {change:+.2f}% ({test.reason})"}


# ---- the waterfall --------------------------------------------------------------------------


def waterfall(base: dict[str, Any], new: dict[str, Any], top: int = 5) -> dict[str, Any]:
    """The change of mean step time split into ``PARTS`` (they add up to it), most impact first,
    each with the kernels, ops, shapes, modules, sync calls or host collectives behind it on both sides."""
    b_steps, n_steps = base["steps"], new["steps"]
    if not b_steps["numbers"] or not n_steps["numbers"]:
        return {"total_delta_ns": None, "base_mean_ns": None, "new_mean_ns": None, "parts": []}
    b_mean, n_mean = float(np.mean(b_steps["step_ns"])), float(np.mean(n_steps["step_ns"]))
    parts: list[dict[str, Any]] = []
    for part in PARTS:
        bv, nv = float(np.mean(b_steps["parts_ns"][part])), float(np.mean(n_steps["parts_ns"][part]))
        parts.append(
            {
                "part": part,
                "base_ns": bv,
                "new_ns": nv,
                "delta_ns": nv - bv,
                "share_pct": round(100.0 * (nv - bv) / (n_mean - b_mean), 2) if n_mean != b_mean else None,
                "behind": _behind(part, base["evidence"], new["evidence"], top, BEHIND_MIN_PCT / 100 * b_mean),
            }
        )
    parts.sort(key=lambda p: -abs(float(p["delta_ns"])))
    return {"total_delta_ns": n_mean - b_mean, "base_mean_ns": b_mean, "new_mean_ns": n_mean, "parts": parts}


def _behind(
    part: str, base: dict[str, dict[str, float]], new: dict[str, dict[str, float]], top: int, min_ns: float
) -> list[Any]:
    if part in DEVICE_PARTS:
        sources = [("kernel", f"kernels:{part}")]
    elif part == "idle_sync":
        sources = [("sync call", "sync_calls"), ("op", "ops")]
    else:
        sources = [("op", "ops"), ("shape", "shapes"), ("module", "modules"), ("collective", "collectives")]
    rows: list[dict[str, Any]] = []
    for what, key in sources:
        b, n = base.get(key, {}), new.get(key, {})
        for name in b.keys() | n.keys():
            bv, nv = b.get(name, 0.0), n.get(name, 0.0)
            if abs(nv - bv) >= min_ns and bv != nv:
                rows.append({"what": what, "name": name, "base_ns": bv, "new_ns": nv, "delta_ns": nv - bv})
    rows.sort(key=lambda r: (-abs(float(r["delta_ns"])), str(r["name"])))
    return rows[:top]


def answer(
    base: dict[str, Any],
    new: dict[str, Any],
    threshold_pct: float = DEFAULT_THRESHOLD_PCT,
    top: int = 5,
    level: float = significance.DEFAULT_LEVEL,
) -> dict[str, Any]:
    """The verdict, the comparability check and the waterfall of two digests."""
    checked = comparability(base, new)
    return {
        "verdict": verdict(base, new, checked, threshold_pct, level),
        "comparability": checked,
        "waterfall": waterfall(base, new, top),
    }

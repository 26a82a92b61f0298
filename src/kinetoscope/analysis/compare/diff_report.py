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

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pyarrow as pa

from kinetoscope.analysis._tables.column_arrays import ints
from kinetoscope.analysis._tables.rank_slices import Tables, per_rank
from kinetoscope.analysis._tables.selection import where
from kinetoscope.analysis.compare import verdict
from kinetoscope.analysis.compare.aggregates import GONE, NEW, make_side
from kinetoscope.analysis.compare.breakdowns import (
    compare_categories,
    compare_kernels,
    compare_modules,
    compare_op_shapes,
    compare_ops,
    kernel_aggregates,
    op_aggregates,
)
from kinetoscope.analysis.compare.headline_figures import (
    combined_figures,
    compare_figures,
    rank_figures,
    step_comparison,
)
from kinetoscope.analysis.compare.op_tree import compare_op_tree, op_path_aggregates, unmatched_in_tree
from kinetoscope.analysis.memory import allocation_diff
from kinetoscope.analysis.time import steps
from kinetoscope.model import significance

SCHEMA = "kinetoscope.diff"
SCHEMA_VERSION = 4  # 3: significant is a rank test (model.significance); step_time.test
# 4: verdict, comparability and waterfall (analysis.compare.verdict); docs/diff.schema.json
ALL_RANKS = "all"


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
        return verdict.digest(self.tables, self.label)

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
    threshold_pct: float = verdict.DEFAULT_THRESHOLD_PCT,
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
        **verdict.answer(base.digest, new.digest, threshold_pct, level=level),
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
    threshold_pct: float = verdict.DEFAULT_THRESHOLD_PCT,
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
        **verdict.answer(base, new, threshold_pct, min(top, 5) if top > 0 else 5, level),
        "ranks_only_in_base": [],
        "ranks_only_in_new": [],
        "scopes": [{"rank": ALL_RANKS, "step_time": step_comparison(base_ns, new_ns)}],
    }


def slower_pct(report: dict[str, Any]) -> float | None:
    """How much slower NEW's median step time is than BASE's, in percent (negative: faster); None without steps."""
    value = report["scopes"][0]["step_time"]["delta_pct"]
    return None if value is None else float(value)


__all__ = ["SCHEMA", "SCHEMA_VERSION", "Run", "compare_digests", "compare_runs", "slower_pct"]

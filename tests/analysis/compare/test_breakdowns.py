"""Matching and noise of ``analysis.compare`` on tiny tables built by hand."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from kinetoscope.analysis.compare import aggregates, breakdowns, diff_report, headline_figures

STEPS = {1: 1000, 2: 1000, 3: 1000}


def events(rows: list[dict[str, Any]]) -> pa.Table:
    """Rows of ``events`` with the columns the comparison reads; ``op`` names the launching op's id."""
    table: dict[str, list[Any]] = {c: [] for c in ("run", "rank", "id", "layer", "kind", "name", "ts_ns", "dur_ns")}
    table.update({c: [] for c in ("self_ns", "op_id", "parent_id", "step", "args")})
    for i, row in enumerate(rows):
        kind = row.get("kind", "op")
        table["run"].append("r")
        table["rank"].append(0)
        table["id"].append(row.get("id", 1000 + i))
        table["layer"].append("framework" if kind == "op" else "device")
        table["kind"].append(kind)
        table["name"].append(row["name"])
        table["ts_ns"].append(i * 10)
        table["dur_ns"].append(row["dur"])
        table["self_ns"].append(row.get("self", row["dur"]))
        table["op_id"].append(row.get("op", -1))
        table["parent_id"].append(row.get("parent", -1))
        table["step"].append(row.get("step", 1))
        table["args"].append(json.dumps(row["shape"]) if "shape" in row else "{}")
    schema = {"rank": pa.int32(), "step": pa.int32()}
    return pa.table({k: pa.array(v, schema.get(k)) for k, v in table.items()})


def kernels_of(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    side = aggregates.make_side(events(rows), STEPS, 1)
    return breakdowns.kernel_aggregates(side.events, side)  # type: ignore[return-value]


def shapes(dims: list[list[int]]) -> dict[str, Any]:
    return {"Input Dims": dims, "Input type": ["float"] * len(dims)}


def test_a_kernel_renamed_under_the_same_op_is_replaced_not_gone_and_new() -> None:
    # GIVEN aten::mm launching one GEMM kernel in BASE and another in NEW, and an add kernel on both sides
    base_rows = [
        {"id": 1, "name": "aten::mm", "dur": 500},
        {"id": 2, "name": "aten::add", "dur": 50},
        {"name": "sm80_gemm_128x64", "kind": "kernel", "dur": 400, "op": 1},
        {"name": "add_kernel", "kind": "kernel", "dur": 40, "op": 2},
        {"name": "orphan_kernel", "kind": "kernel", "dur": 30},
    ]
    new_rows = [
        {"id": 1, "name": "aten::mm", "dur": 300},
        {"id": 2, "name": "aten::add", "dur": 50},
        {"name": "sm90_gemm_256x128", "kind": "kernel", "dur": 250, "op": 1},
        {"name": "add_kernel", "kind": "kernel", "dur": 40, "op": 2},
        {"name": "other_orphan", "kind": "kernel", "dur": 20},
    ]
    sides = (aggregates.make_side(events(base_rows), STEPS, 1), aggregates.make_side(events(new_rows), STEPS, 1))
    # WHEN the kernels are compared
    rows = breakdowns.compare_kernels(kernels_of(base_rows), kernels_of(new_rows), sides)
    by_match = {(r["match"], r["op"], r["name"], r["new_name"]) for r in rows}
    # THEN the GEMM is one replaced row under aten::mm, first by impact (-150 ns per step over 3 steps: -50)
    assert rows[0]["match"] == "replaced"
    assert (rows[0]["op"], rows[0]["name"], rows[0]["new_name"]) == (
        "aten::mm",
        "sm80_gemm_128x64",
        "sm90_gemm_256x128",
    )
    assert rows[0]["delta_per_step_ns"] == pytest.approx(-50)
    assert ("matched", "aten::add", "add_kernel", "add_kernel") in by_match
    # AND kernels launched outside any op are never paired: they are gone and new
    assert ("gone", "", "orphan_kernel", "orphan_kernel") in by_match
    assert ("new", "", "other_orphan", "other_orphan") in by_match
    assert diff_report.unmatched([], rows)["kernels_gone"] == ["(no op) / orphan_kernel"]


def test_ops_match_by_shape_then_by_name() -> None:
    # GIVEN aten::addmm at batch 64 in BASE and batch 128 in NEW, and aten::relu with one shape on both sides
    base = [
        {"name": "aten::addmm", "dur": 600, "shape": shapes([[64, 512], [512, 512]])},
        {"name": "aten::relu", "dur": 90, "shape": shapes([[64, 512]])},
        {"name": "aten::gone_op", "dur": 30},
    ]
    new = [
        {"name": "aten::addmm", "dur": 1200, "shape": shapes([[128, 512], [512, 512]])},
        {"name": "aten::relu", "dur": 90, "shape": shapes([[64, 512]])},
    ]
    sides = (aggregates.make_side(events(base), STEPS, 1), aggregates.make_side(events(new), STEPS, 1))
    # WHEN compared by (name, shape) and by name
    by_shape = breakdowns.compare_op_shapes(*(breakdowns.op_aggregates(s.events, s, True) for s in sides), sides)
    by_name = breakdowns.compare_ops(*(breakdowns.op_aggregates(s.events, s, False) for s in sides), sides)
    # THEN addmm is one reshaped row, first, with both shapes; relu matched exactly; gone_op gone
    top = by_shape[0]
    assert (top["name"], top["match"]) == ("aten::addmm", "reshaped")
    assert top["shape"] == "[[64,512],[512,512]] float,float"
    assert top["new_shape"] == "[[128,512],[512,512]] float,float"
    assert top["delta_per_step_ns"] == pytest.approx(200)  # (1200 - 600) / 3 steps
    assert {(r["name"], r["match"]) for r in by_shape[1:]} == {("aten::relu", "matched"), ("aten::gone_op", "gone")}
    assert [(r["name"], r["match"]) for r in by_name][:1] == [("aten::addmm", "matched")]


def test_a_delta_inside_the_step_to_step_variation_is_not_significant() -> None:
    # GIVEN over five steps an op whose self time per step varies (100-300 ns in BASE, the same +10 in NEW),
    # and another that is steady and grows by 50 ns a step
    steps = {n: 1000 for n in range(1, 6)}
    noisy = (100, 300, 200, 150, 250)
    base = [{"name": "aten::noisy", "dur": d, "step": s} for s, d in zip(steps, noisy, strict=True)]
    base += [{"name": "aten::steady", "dur": 100, "step": s} for s in steps]
    new = [{"name": "aten::noisy", "dur": d + 10, "step": s} for s, d in zip(steps, noisy, strict=True)]
    new += [{"name": "aten::steady", "dur": 150, "step": s} for s in steps]
    sides = (aggregates.make_side(events(base), steps, 1), aggregates.make_side(events(new), steps, 1))
    # WHEN compared
    rows = {
        r["name"]: r
        for r in breakdowns.compare_ops(*(breakdowns.op_aggregates(s.events, s, False) for s in sides), sides)
    }
    # THEN +10 ns inside the variation is noise (rank test); +50 ns on every step of a steady op is not
    assert rows["aten::noisy"]["delta_per_step_ns"] == pytest.approx(10)
    assert rows["aten::noisy"]["significant"] is False
    assert rows["aten::steady"]["significant"] is True
    assert [r for r in rows] == ["aten::steady", "aten::noisy"]  # sorted by impact


def test_three_steps_a_side_are_too_few_to_call_a_row_unchanged() -> None:
    base = [{"name": "aten::steady", "dur": 100, "step": s} for s in STEPS]
    new = [{"name": "aten::steady", "dur": 150, "step": s} for s in STEPS]
    sides = (aggregates.make_side(events(base), STEPS, 1), aggregates.make_side(events(new), STEPS, 1))
    rows = breakdowns.compare_ops(*(breakdowns.op_aggregates(s.events, s, False) for s in sides), sides)
    assert rows[0]["significant"] is None  # a rank test over 3 and 3 steps reaches 90 % at best


def test_every_new_step_far_slower_reads_significant_whatever_one_outlier_step() -> None:
    # GIVEN the median step +237 %, every NEW step at least 3.2x every BASE step, one NEW step of 1.5 s
    base = [50e6, 51e6, 52e6, 53e6, 52e6, 51e6]
    new = [171e6, 172e6, 173e6, 174e6, 175e6, 1500e6]
    result = headline_figures.step_comparison(base, new)
    # THEN the change is real (the raw spread, 541 ms, is larger than the 122 ms median delta: the old rule
    # called it noise), with its confidence
    assert result["noise_ns"] > result["delta_median_ns"]
    assert result["significant"] is True
    assert result["test"]["verdict"] == "changed" and result["test"]["confidence"] > 0.99
    assert result["test"]["prob_new_larger"] == 1.0


def test_step_times_compare_as_distributions() -> None:
    # GIVEN step times of 10, 11, 12 ms and 10.5, 11.5, 12.5 ms
    result = headline_figures.step_comparison([10e6, 11e6, 12e6], [10.5e6, 11.5e6, 12.5e6])
    # THEN the median moves by 0.5 ms; three steps a side cannot show a change at 95 %: inconclusive
    assert result["base"]["median_ns"] == 11e6
    assert result["base"]["count"] == 3
    assert result["delta_median_ns"] == 0.5e6
    assert result["delta_pct"] == round(100 * 0.5 / 11, 2)
    assert np.isclose(result["noise_ns"], np.sqrt(2) * 1e6)
    assert result["significant"] is None and result["test"]["verdict"] == "inconclusive"
    # AND with one step a side significance is unknown
    assert headline_figures.step_comparison([10e6], [20e6])["significant"] is None
    assert headline_figures.step_comparison([], [20e6])["delta_median_ns"] is None

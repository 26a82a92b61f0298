"""Matching by place in the op tree and the memory comparison, on tiny tables built by hand."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from kinetoscope.analysis.compare import aggregates, breakdowns, op_tree
from kinetoscope.analysis.memory import allocation_diff
from kinetoscope.dataset.schema import TABLES_BY_NAME

STEPS = {1: 1000}
MODULE = "nn.Module: Block.fc1"


def tree_events(rows: list[tuple[int, str, str, int, int, int]]) -> pa.Table:
    """Rows (id, kind, name, op_id, parent_id, self_ns) of one rank in step 1."""
    columns: dict[str, list[Any]] = {c: [] for c in ("id", "kind", "name", "op_id", "parent_id", "self_ns")}
    for row in rows:
        for column, value in zip(columns, row, strict=True):
            columns[column].append(value)
    n = len(rows)
    table = {
        "run": ["r"] * n,
        "rank": pa.array([0] * n, pa.int32()),
        "ts_ns": list(range(n)),
        "dur_ns": columns["self_ns"],
        "step": pa.array([1] * n, pa.int32()),
        "args": ["{}"] * n,
        **columns,
    }
    table["layer"] = ["framework"] * n  # Python frames are framework rows, as ingest writes them
    return pa.table(table)


def test_an_op_keeps_its_counterpart_by_place_and_a_fused_op_under_one_parent_is_replaced() -> None:
    # GIVEN BASE: Block.fc1 > aten::linear > (aten::mm 100, aten::add 50), and aten::relu at the top;
    # NEW: the same linear with aten::add fused into aten::_fused_add (40), another aten::mm (300)
    # inserted at the top, and no relu
    base = tree_events([
        (1, "python", MODULE, -1, -1, 0),
        (2, "op", "aten::linear", -1, 1, 10),
        (3, "op", "aten::mm", 2, 2, 100),
        (4, "op", "aten::add", 2, 2, 50),
        (5, "op", "aten::relu", -1, -1, 30),
    ])
    new = tree_events([
        (1, "python", MODULE, -1, -1, 0),
        (2, "op", "aten::linear", -1, 1, 10),
        (3, "op", "aten::mm", 2, 2, 100),
        (4, "op", "aten::_fused_add", 2, 2, 40),
        (5, "op", "aten::mm", -1, -1, 300),
    ])
    sides = (aggregates.make_side(base, STEPS, 1), aggregates.make_side(new, STEPS, 1))
    # WHEN compared by place in the op tree, and by name
    tree = op_tree.compare_op_tree(*(op_tree.op_path_aggregates(s.events, s) for s in sides), sides)
    per_op = (breakdowns.op_aggregates(s.events, s, False) for s in sides)
    by_name = {r["name"]: r for r in breakdowns.compare_ops(*per_op, sides)}
    rows = {(r["parent"], r["name"], r["new_name"]): r for r in tree}
    # THEN the mm under fc1's linear is matched with no delta, while by name aten::mm grew by 300
    under = f"{MODULE} / aten::linear"
    assert rows[(under, "aten::mm", "aten::mm")]["match"] == "matched"
    assert rows[(under, "aten::mm", "aten::mm")]["delta_per_step_ns"] == 0
    assert by_name["aten::mm"]["delta_per_step_ns"] == 300
    # AND the add fused under the same parent is replaced; the new top-level mm is new (nothing is
    # paired at the top); the relu gone
    assert rows[(under, "aten::add", "aten::_fused_add")]["match"] == "replaced"
    assert rows[(under, "aten::add", "aten::_fused_add")]["delta_per_step_ns"] == -10
    assert rows[("", "aten::mm", "aten::mm")]["match"] == "new"
    assert rows[("", "aten::relu", "aten::relu")]["match"] == "gone"
    assert tree[0]["name"] == "aten::mm" and tree[0]["parent"] == ""  # most impact first
    assert op_tree.unmatched_in_tree(tree) == {"op_tree_gone": ["aten::relu"], "op_tree_new": ["aten::mm"]}
    # AND per module: the ops under fc1 (linear's own 10, mm, add or the fused add) and those outside any
    modules = {r["module"]: r for r in breakdowns.compare_modules(sides)}
    assert modules[MODULE]["base_self_per_step_ns"] == 160 and modules[MODULE]["new_self_per_step_ns"] == 150
    assert modules["(no module)"]["delta_per_step_ns"] == 270


def allocations(rows: list[tuple[int, int, int, int]]) -> pa.Table:
    """Blocks (stack_id, size_bytes, alloc_ts_ns, free_ts_ns) of rank 0."""
    base = {"run": "r", "rank": 0, "session": "s", "addr": 0, "device": 0, "event_id": -1}
    keys = ("stack_id", "size_bytes", "alloc_ts_ns", "free_ts_ns")
    return pa.Table.from_pylist([{**base, **dict(zip(keys, row, strict=True))} for row in rows],
                                schema=TABLES_BY_NAME["allocations"].full_schema())


def frames(stacks: dict[int, tuple[str, int, int]]) -> pa.Table:
    """stack_id -> (function, line, parent stack_id), all in train.py."""
    rows = [{"run": "r", "rank": 0, "stack_id": sid, "parent_id": up, "name": name, "file": "train.py", "line": line}
            for sid, (name, line, up) in stacks.items()]
    return pa.Table.from_pylist(rows, schema=TABLES_BY_NAME["frames"].full_schema())


def test_memory_compares_the_peaks_and_the_stacks_live_at_each_peak() -> None:
    # GIVEN BASE: weights (100, before recording) and activations (60 at t=10, freed at 30), peak 160;
    # NEW: the same stacks under other ids, activations 90, and a 20-byte scratch block freed before them
    base_frames = frames({1: ("main", 1, -1), 2: ("build_model", 12, 1), 3: ("forward", 40, 1)})
    new_frames = frames({11: ("main", 1, -1), 12: ("build_model", 12, 11), 13: ("forward", 40, 11),
                         14: ("scratch", 50, 11)})
    base = {"allocations": allocations([(2, 100, -1, -1), (3, 60, 10, 30)]), "frames": base_frames}
    new = {"allocations": allocations([(12, 100, -1, -1), (13, 90, 10, 30), (14, 20, 5, 8)]), "frames": new_frames}
    # WHEN compared
    found = allocation_diff.compare_allocations(base, new, top=10)
    assert found is not None
    # THEN the peaks are 160 and 190, and forward's bytes at the peak grew by 30 (scratch was freed by then)
    assert (found["base"]["peak_bytes"], found["new"]["peak_bytes"], found["delta_peak_bytes"]) == (160, 190, 30)
    grew = [(r["stack"], r["delta_bytes"]) for r in found["stacks_grew"]]
    assert grew == [("forward (train.py:40) < main (train.py:1)", 30)]
    assert found["stacks_shrank"] == []
    assert found["stacks_total"] == 2  # build_model unchanged, scratch not live at either peak
    # AND without snapshots on a side there is nothing to compare
    assert allocation_diff.compare_allocations(base, {**new, "allocations": new["allocations"].slice(0, 0)}, 10) is None


@pytest.mark.parametrize("ts, live", [(9, [True, False]), (10, [True, True]), (30, [True, False])])
def test_a_block_is_live_from_its_allocation_until_its_free(ts: int, live: list[bool]) -> None:
    blocks = allocations([(1, 100, -1, -1), (2, 60, 10, 30)])
    assert allocation_diff.live_at(blocks, ts).tolist() == live

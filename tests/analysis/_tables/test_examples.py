"""Each row of a grouped analysis names one event that stands for it (``example_id``): its largest."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from kinetoscope.analysis import ANALYSES_BY_NAME
from kinetoscope.analysis._tables import chunks
from kinetoscope.analysis._tables.examples import example_ids

from ..memory.test_memory_peaks import _tables as allocation_tables
from ..ops.test_attribution import _by, _tables
from ..test_analyses import events, work


def test_example_ids_pick_the_heaviest_row_of_each_group_first_on_ties() -> None:
    group = np.asarray([0, 1, 0, 0, 2])
    weight = np.asarray([5, 7, 9, 9, 1])
    ids = np.asarray([100, 101, 102, 103, 104])
    assert example_ids(group, weight, ids, 4).tolist() == [102, 101, 104, -1]
    assert example_ids(group[:0], weight[:0], ids[:0], 2).tolist() == [-1, -1]


def test_top_ops_example_is_the_call_with_most_self_time() -> None:
    table = events([
        {"name": "aten::mm", "ts_ns": 0, "dur_ns": 10},
        {"name": "aten::mm", "ts_ns": 20, "dur_ns": 40},
        {"name": "aten::add", "ts_ns": 70, "dur_ns": 5},
    ])
    rows = {r["name"]: r for r in ANALYSES_BY_NAME["top_ops"]({"events": table}).to_pylist()}
    assert (rows["aten::mm"]["example_id"], rows["aten::add"]["example_id"]) == (1, 2)


def test_kernel_and_memory_rows_name_their_longest_event() -> None:
    table = events([
        work("gemm", 0, 30), work("gemm", 40, 80), work("relu", 130, 5),
        work("Memcpy HtoD (Pageable -> Device)", 140, 3, category="gpu_memcpy"),
        work("Memcpy HtoD (Pinned -> Device)", 150, 9, category="gpu_memcpy"),
    ])
    kernels = {r["name"]: r["example_id"] for r in ANALYSES_BY_NAME["top_kernels"]({"events": table}).to_pylist()}
    assert (kernels["gemm"], kernels["relu"]) == (1, 2)
    copies = ANALYSES_BY_NAME["memory_operations"]({"events": table}).to_pylist()
    assert [(r["kind"], r["calls"], r["example_id"]) for r in copies] == [("Memcpy HtoD", 2, 4)]


def test_device_time_rows_name_their_longest_kernel() -> None:
    # rows 5 (50 ns) and 6 (20 ns) under the first addmm, row 8 (30 ns) under the second
    assert _by("gpu_time_by_op", "op")["aten::addmm"]["example_id"] == 5
    assert _by("gpu_time_by_top_op", "top_op")["train_step"]["example_id"] == 5
    assert _by("gpu_time_by_op", "op")["(no launching op)"]["example_id"] == 10
    shapes = ANALYSES_BY_NAME["gpu_time_by_shape"](_tables()).to_pylist()
    by_dims = {r["input_dims"]: r["example_id"] for r in shapes if r["op"] == "aten::addmm"}
    assert by_dims == {"[[4],[2,3],[3,4]]": 5, "[[8],[2,3],[3,8]]": 8}


def test_allocation_stack_rows_name_the_allocator_event_of_their_largest_joined_block() -> None:
    tables = allocation_tables()
    allocs = tables["allocations"]
    # stack 7's blocks: 100 bytes joined to event 41, 50 bytes to event 42; stack 9's one block unjoined
    joined = [41 if (r["stack_id"], r["size_bytes"]) == (7, 100) else 42 if r["stack_id"] == 7 else -1
              for r in allocs.to_pylist()]
    column = allocs.schema.get_field_index("event_id")
    tables["allocations"] = allocs.set_column(column, "event_id", pa.array(joined, pa.int64()))
    found = ANALYSES_BY_NAME["top_allocation_stacks"](tables).to_pylist()
    rows = {(r["rank"], r["stack_id"]): r["example_id"] for r in found}
    assert rows[(0, 7)] == 41 and rows[(0, 9)] == -1 and rows[(0, 3)] == -1


def test_example_ids_read_a_chunk_of_rows_at_a_time_are_those_of_all_rows_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # GIVEN rows whose groups' heaviest rows (and ties) fall in different chunks of three rows
    group = np.asarray([0, 1, 0, 2, 1, 0, 2, 1])
    weight = np.asarray([5, 2, 9, 1, 7, 9, 1, 7], dtype=np.int32)
    ids = np.arange(100, 108)
    whole = example_ids(group, weight, ids, 4).tolist()
    # WHEN they are read three rows at a time; THEN each group's first heaviest row, as read at once
    monkeypatch.setattr(chunks, "CHUNK_ROWS", 3)
    assert example_ids(group, weight, ids, 4).tolist() == whole == [102, 104, 103, -1]

"""A rank's names read for the rows a rule asks about, the same from a dictionary column as from a plain one."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from kinetoscope.findings.ranks import RankData, top_names

NAMES = ["aten::mm", None, "cudaLaunchKernel", "aten::mm", "", "ncclKernel"]


def rank(dictionary: bool) -> RankData:
    names = pa.array(NAMES, pa.string())
    events = pa.table({"name": names.dictionary_encode() if dictionary else names, "ts_ns": np.arange(len(NAMES))})
    return RankData("r", 0, events, {}, 0)


@pytest.mark.parametrize("dictionary", [True, False])
def test_names_of_positions_masks_and_one_row(dictionary: bool) -> None:
    data = rank(dictionary)
    assert data.names().tolist() == NAMES
    assert data.names_at(np.asarray([5, 1, 0, 0])).tolist() == ["ncclKernel", None, "aten::mm", "aten::mm"]
    mask = np.asarray([False, True, False, True, True, False])
    assert data.names_at(mask).tolist() == [None, "aten::mm", ""]
    assert data.names_at(np.zeros(0, dtype=np.int64)).tolist() == []
    assert [data.name_of(row) for row in range(len(NAMES))] == NAMES


def test_step_rows_are_the_step_ops_and_annotations() -> None:
    names = ["ProfilerStep#3", "ProfilerStep#4", "ProfilerStep#5", "ProfilerStep#x", "aten::mm", "ProfilerStep#6"]
    kind = ["op", "user_annotation", "kernel", "op", "op", None]
    events = pa.table({"name": pa.array(names).dictionary_encode(), "kind": pa.array(kind).dictionary_encode()})
    data = RankData("r", 0, events, {}, 0)
    assert data.step_rows.tolist() == [0, 1]
    assert data.kind_at(np.asarray([5, 4, 2]), "op", "kernel").tolist() == [False, True, True]
    assert data.kind_at(np.asarray([1]), "memcpy").tolist() == [False]


def test_device_busy_is_the_union_of_the_device_work_in_steps() -> None:
    # GIVEN kernels [0,10) [5,20) [30,40) in step 1, a memcpy [50,55) outside the steps, an op [0,100)
    kind = ["kernel", "kernel", "kernel", "memcpy", "op"]
    events = pa.table(
        {
            "kind": pa.array(kind).dictionary_encode(),
            "ts_ns": np.asarray([5, 0, 30, 50, 0]),
            "dur_ns": np.asarray([15, 10, 10, 5, 100]),
            "step": np.asarray([1, 1, 1, -1, 1], dtype=np.int32),
        }
    )
    data = RankData("r", 0, events, {}, 0)
    assert data.device_rows.tolist() == [0, 1, 2]
    assert [s.tolist() for s in data.device_busy] == [[0, 30], [20, 40]]
    assert data.device_span_ns == 40
    # AND a rank whose device work lies outside its steps has no span, not an error
    outside = RankData("r", 0, events.set_column(3, "step", pa.array([-1, -1, -1, -1, 1], pa.int32())), {}, 0)
    assert outside.device_rows.tolist() == [] and outside.device_span_ns == 0


def _top_by_strings(names: list[str | None], weights: list[int], top: int = 5) -> list[dict[str, object]]:
    """The names by summed weight as ``np.unique`` of the names as ``str`` groups them: ties in name order."""
    unique, inverse = np.unique(np.asarray(names, dtype=object).astype(str), return_inverse=True)
    sums = np.bincount(inverse, weights=np.asarray(weights, dtype=np.float64), minlength=len(unique))
    counts = np.bincount(inverse, minlength=len(unique))
    order = np.argsort(-sums, kind="stable")[:top]
    return [{"name": str(unique[i]), "ns": int(sums[i]), "count": int(counts[i])} for i in order.tolist()]


@pytest.mark.parametrize("dictionary", [True, False])
def test_top_names_of_rows_are_those_of_their_names_ties_in_name_order(dictionary: bool) -> None:
    # GIVEN names with a null, the text "None", ties and a name of no row
    names = ["b", None, "a", "None", "c", "b", "a", "unused", "c", "d"]
    weights = [5, 2, 3, 4, 1, 1, 3, 9, 5, 0]
    events = pa.table({"name": pa.array(names, pa.string()), "ts_ns": np.arange(len(names))})
    if dictionary:
        events = events.set_column(0, "name", events.column("name").dictionary_encode())
    data = RankData("r", 0, events, {}, 0)
    rows = np.asarray([0, 1, 2, 3, 4, 5, 6, 8, 9])
    # WHEN the rows' names are ranked by weight, from the rows or from the names
    by_rows = data.top_names_at(rows, np.asarray(weights)[rows], top=10)
    by_names = top_names(data.names_at(rows), np.asarray(weights)[rows], top=10)
    # THEN both are as grouping the names as text gives: null and "None" one name, ties by name
    expected = _top_by_strings([names[i] for i in rows], [weights[i] for i in rows], top=10)
    assert by_rows == by_names == expected
    assert [top["name"] for top in expected] == ["None", "a", "b", "c", "d"]
    assert data.top_names_at(rows[:0], np.zeros(0, dtype=np.int64)) == [] == top_names(np.asarray([]), np.asarray([]))

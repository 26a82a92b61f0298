"""A rank's names read for the rows a rule asks about, the same from a dictionary column as from a plain one."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from kinetoscope.findings.ranks import RankData

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

"""Device time rolled up to launching ops, shapes, outermost annotations and categories, on a tiny
trace built here: one step, a ``train_step`` annotation, two ``aten::addmm`` of different shapes
(three kernels), a copy launched before the window and a kernel with no launching call."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from kinetoscope.analysis import ANALYSES_BY_NAME
from kinetoscope.analysis.ops import attribution
from kinetoscope.analysis.settings import categories
from kinetoscope.analysis.settings.user_options import UserOptions, using

from ..test_analyses import events


def _op(name: str, ts: int, dur: int, parent: int, dims: list | None = None, **extra: object) -> dict:
    args = {"Input Dims": dims, "Input type": ["float"] * len(dims)} if dims else {}
    return {"name": name, "ts_ns": ts, "dur_ns": dur, "parent_id": parent, "args": json.dumps(args), **extra}


def _kernel(name: str, ts: int, dur: int, op: int, *, correlation: int = -1, category: str = "kernel") -> dict:
    return {
        "name": name,
        "ts_ns": ts,
        "dur_ns": dur,
        "category": category,
        "layer": "device",
        "device": 0,
        "op_id": op,
        "correlation": correlation,
    }


ROWS = [
    _op("ProfilerStep#1", 0, 1000, -1, category="user_annotation"),  # 0
    _op("train_step", 0, 900, 0, category="user_annotation"),  # 1
    _op("aten::linear", 10, 190, 1),  # 2
    _op("aten::addmm", 20, 170, 2, [[4], [2, 3], [3, 4]]),  # 3
    _op("cudaLaunchKernel", 30, 10, 3, layer="runtime", category="cuda_runtime"),  # 4
    _kernel("ampere_sgemm_32x32", 100, 50, 3, correlation=1),  # 5
    _kernel("ampere_sgemm_64x64", 150, 20, 3, correlation=2),  # 6
    _op("aten::addmm", 300, 100, 1, [[8], [2, 3], [3, 8]]),  # 7
    _kernel("ampere_sgemm_32x32", 400, 30, 7, correlation=3),  # 8
    _kernel("Memcpy HtoD (Pageable -> Device)", 500, 10, -1, correlation=9, category="gpu_memcpy"),  # 9
    _kernel("stray_kernel", 600, 5, -1),  # 10: no correlation, no launching call
]
BUSY_NS = 50 + 20 + 30 + 10 + 5


def _tables() -> dict[str, pa.Table]:
    table = events([{k: v for k, v in row.items() if k != "args"} for row in ROWS])
    return {"events": table.append_column("args", pa.array([r.get("args", "{}") for r in ROWS], pa.string()))}


def _by(name: str, key: str) -> dict:
    return {r[key]: r for r in ANALYSES_BY_NAME[name](_tables()).to_pylist()}


def test_device_time_goes_to_the_launching_op_and_unlaunched_work_gets_its_own_lines() -> None:
    found = _by("gpu_time_by_op", "op")
    assert set(found) == {"aten::addmm", attribution.BEFORE_WINDOW, attribution.NO_OP}
    addmm = found["aten::addmm"]
    assert (addmm["calls"], addmm["kernels"], addmm["gpu_ns"]) == (2, 3, 100)
    assert addmm["pct_of_busy"] == round(100 * 100 / BUSY_NS, 2)  # 86.96
    assert (found[attribution.BEFORE_WINDOW]["gpu_ns"], found[attribution.NO_OP]["gpu_ns"]) == (10, 5)
    assert found[attribution.NO_OP]["calls"] == 0


def test_each_input_shape_is_its_own_line() -> None:
    rows = ANALYSES_BY_NAME["gpu_time_by_shape"](_tables()).to_pylist()
    shapes = {(r["op"], r["input_dims"]): (r["calls"], r["kernels"], r["gpu_ns"]) for r in rows}
    assert shapes[("aten::addmm", "[[4],[2,3],[3,4]]")] == (1, 2, 70)
    assert shapes[("aten::addmm", "[[8],[2,3],[3,8]]")] == (1, 1, 30)
    assert shapes[(attribution.NO_OP, "")] == (0, 1, 5)


def test_outermost_annotation_collects_everything_under_it_but_the_step_does_not() -> None:
    found = _by("gpu_time_by_top_op", "top_op")
    assert (found["train_step"]["calls"], found["train_step"]["kernels"], found["train_step"]["gpu_ns"]) == (1, 3, 100)
    assert not any(name.startswith("ProfilerStep#") for name in found)


def test_inclusive_time_climbs_the_op_chain() -> None:
    table = _tables()["events"]
    launched = attribution.launches(table)
    total, count = attribution.inclusive_ns(attribution.op_parents(table), launched.op, launched.dur_ns)
    assert (total[2], total[3], total[7], total[1], total[0]) == (70, 70, 30, 100, 0)  # the step is no parent
    assert (count[1], count[3]) == (3, 2)


def test_categories_split_device_and_op_time() -> None:
    found = _by("time_by_category", "category")
    assert (found["GEMM"]["kernels"], found["GEMM"]["gpu_ns"]) == (3, 100)
    # ops: linear 190 - 170 = 20 self, addmm 170 - 10 (its launch call) = 160, addmm 100
    assert (found["GEMM"]["op_calls"], found["GEMM"]["op_self_ns"], found["GEMM"]["op_self_pct"]) == (3, 280, 100.0)
    assert found[categories.MEMORY]["gpu_ns"] == 10
    assert found[categories.OTHER]["gpu_ns"] == 5


def test_a_user_file_comes_before_the_built_in_rules(tmp_path: Path) -> None:
    path = tmp_path / "categories.json"
    path.write_text(json.dumps({"stray work": ["^stray_"], "attention": ["sgemm_64x64"]}))
    with using(UserOptions(categories.user_rules(path))):
        found = _by("time_by_category", "category")
    assert found["stray work"]["gpu_ns"] == 5
    # a kernel takes its launching op's category first: the addmm's kernels stay GEMM
    assert found["GEMM"]["gpu_ns"] == 100 and "attention" not in found


def test_a_toml_file_works_and_a_bad_file_is_named(tmp_path: Path) -> None:
    path = tmp_path / "categories.toml"
    path.write_text('"stray work" = ["^stray_"]\n')
    with using(UserOptions(categories.user_rules(path))):
        assert _by("time_by_category", "category")["stray work"]["gpu_ns"] == 5
    for text, said in [
        ("{not json", "not a readable categories file"),
        ('{"GEMM": "gemm"}', "category 'GEMM': expected a list"),
        ('{"GEMM": ["(?<=x)gemm"]}', "category 'GEMM': pattern '(?<=x)gemm' is not a valid expression"),
    ]:
        bad = tmp_path / "bad.json"
        bad.write_text(text)
        with pytest.raises(ValueError, match=re.escape(said)) as raised:
            categories.user_rules(bad)
        assert str(bad) in str(raised.value)


def test_built_in_rules_name_the_common_ops_and_kernels() -> None:
    names = [
        "aten::mm",
        "aten::_scaled_dot_product_flash_attention",
        "aten::convolution",
        "aten::add_",
        "aten::sum",
        "aten::native_layer_norm",
        "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
        "Memcpy DtoH (Device -> Pinned)",
        "triton_poi_fused_add_0",
        "aten::view",
    ]
    codes = categories.categorise(pa.array(names), categories.RULES)
    got = [categories.labels(categories.RULES)[c] for c in codes]
    assert got == [
        "GEMM",
        "attention",
        "convolution",
        "elementwise",
        "reduction",
        "normalisation",
        "communication",
        "memory copy/set",
        "Triton/compiled",
        "other",
    ]


def test_device_time_by_nearest_module_frame() -> None:
    # GIVEN nn.Module frames (Python rows) around the ops, and one op outside any module
    frame = {"category": "python_function"}
    rows = [
        _op("nn.Module: Net_0", 0, 1000, -1, **frame),  # 0
        _op("nn.Module: Linear_0", 10, 290, 0, **frame),  # 1
        _op("aten::linear", 20, 270, 1),  # 2
        _op("aten::addmm", 30, 250, 2),  # 3
        _kernel("gemm", 50, 50, 3, correlation=1),  # 4
        _op("nn.Module: ReLU_0", 400, 100, 0, **frame),  # 5
        _op("aten::relu", 410, 80, 5),  # 6
        _kernel("relu_kernel", 420, 10, 6, correlation=2),  # 7
        _op("aten::mm", 1100, 100, -1),  # 8
        _kernel("gemm", 1110, 20, 8, correlation=3),  # 9
    ]
    table = events([{k: v for k, v in row.items() if k != "args"} for row in rows])
    found = {r["module"]: r for r in ANALYSES_BY_NAME["gpu_time_by_module"]({"events": table}).to_pylist()}
    # THEN each kernel goes to the innermost module around its op, the rest to "(no module)"
    assert {name: (r["calls"], r["gpu_ns"]) for name, r in found.items()} == {
        "nn.Module: Linear_0": (1, 50),
        "nn.Module: ReLU_0": (1, 10),
        attribution.NO_MODULE: (0, 20),
    }


def test_inclusive_time_sums_each_rows_own_and_descendants_work() -> None:
    # GIVEN ops 0 > 1 > 2 and a separate op 3, with work launched by 2, 1, none and 3
    up = np.asarray([-1, 0, 1, -1])
    op, dur = np.asarray([2, 1, -1, 3]), np.asarray([5, 7, 9, 11])
    # THEN each op counts the work under it, the unlaunched piece counts nowhere
    total, kernels = attribution.inclusive_ns(up, op, dur)
    assert total.tolist() == [12, 12, 5, 11]
    assert kernels.tolist() == [2, 2, 1, 1]


def test_op_up_is_kept_in_32_bits_and_finds_each_rows_op() -> None:
    # GIVEN rows 0..4 whose ids run from 100, three of them inside the op of row 0, one outside the table
    table = pa.table({"id": [100, 101, 102, 103, 104], "op_id": [-1, 100, 100, 999, 103]})
    # WHEN each row's op row is found
    up = attribution.op_up(table)
    # THEN it is the op's row (-1: none or not in the table), held in half the bytes of an int64
    assert up.tolist() == [-1, 0, 0, -1, 3]
    assert up.dtype == np.int32

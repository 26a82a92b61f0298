"""The roofline per op and shape on tiny traces built here: a 1024³ float matmul whose kernel takes
1 ms on an A100, the Linear above it, and the same ops on a CPU-only rank."""

from __future__ import annotations

import json

import pyarrow as pa

from kinetoscope.analysis import ANALYSES_BY_NAME

from ..test_analyses import events

SIDE = 1024
SQUARE = [SIDE, SIDE]
FLOPS = 2 * SIDE**3  # 2,147,483,648
MOVED_BYTES = 3 * SIDE * SIDE * 4  # two inputs read, one output written, float
KERNEL_NS = 1_000_000


def _rows(with_kernel: bool) -> list[dict]:
    shapes = json.dumps({"Input Dims": [SQUARE, SQUARE], "Input type": ["float", "float"]})
    found = [
        {"name": "aten::linear", "ts_ns": 0, "dur_ns": 3_000_000, "args": shapes},
        {"name": "aten::mm", "ts_ns": 10, "dur_ns": 2_000_000, "parent_id": 0, "args": shapes},
        {"name": "aten::view", "ts_ns": 2_500_000, "dur_ns": 10, "parent_id": 0, "args": shapes},
    ]
    if with_kernel:
        kernel = {"name": "sgemm_128x128", "ts_ns": 100, "dur_ns": KERNEL_NS, "category": "kernel"}
        found.append({**kernel, "layer": "device", "device": 0, "op_id": 1, "correlation": 1})
    return found


def _tables(with_kernel: bool, device_name: str = "NVIDIA A100-SXM4-40GB") -> dict[str, pa.Table]:
    rows = _rows(with_kernel)
    table = events([{k: v for k, v in r.items() if k != "args"} for r in rows])
    table = table.append_column("args", pa.array([r.get("args", "{}") for r in rows], pa.string()))
    sessions = pa.table({"run": ["r"], "rank": pa.array([0], pa.int32()), "device_name": [device_name]})
    return {"events": table, "sessions": sessions}


def _by_op(tables: dict[str, pa.Table]) -> dict[str, dict]:
    return {r["op"]: r for r in ANALYSES_BY_NAME["op_roofline"](tables).to_pylist()}


def test_achieved_rate_and_bound_against_the_device() -> None:
    mm = _by_op(_tables(with_kernel=True))["aten::mm"]
    assert (mm["flops"], mm["moved_bytes"], mm["time_ns"], mm["time_source"]) == (FLOPS, MOVED_BYTES, KERNEL_NS, "gpu")
    assert mm["tflops_per_s"] == round(FLOPS / KERNEL_NS / 1e3, 4)  # 2.1475
    assert mm["flops_per_byte"] == round(FLOPS / MOVED_BYTES, 3)  # 170.667, above A100's fp32 ridge 19.5/1.555
    assert (mm["peak_class"], mm["bound"]) == ("fp32", "compute")
    assert mm["roofline_pct"] == round(100 * mm["tflops_per_s"] / 19.5, 2)  # 11.01


def test_a_composite_op_is_timed_by_the_kernels_launched_under_it() -> None:
    linear = _by_op(_tables(with_kernel=True))["aten::linear"]
    assert (linear["flops"], linear["time_ns"]) == (FLOPS, KERNEL_NS)


def test_cpu_only_rank_uses_cpu_time_and_no_device() -> None:
    found = _by_op(_tables(with_kernel=False))
    assert (found["aten::mm"]["time_ns"], found["aten::mm"]["time_source"]) == (2_000_000, "cpu")
    assert found["aten::mm"]["peak_class"] is None and found["aten::mm"]["bound"] is None
    assert "aten::view" not in found  # no model, launched nothing: not listed


def test_unknown_device_gives_rates_but_no_bound() -> None:
    mm = _by_op(_tables(with_kernel=True, device_name="Some Future GPU"))["aten::mm"]
    assert mm["tflops_per_s"] is not None and mm["bound"] is None and mm["roofline_pct"] is None
    devices_row = ANALYSES_BY_NAME["roofline_devices"](_tables(True)).to_pylist()[0]
    assert devices_row["device"] == "A100 SXM 40GB" and "A100" in devices_row["source"]


def _gemm_tables(
    dims: list[list[int]], dtype: str, op: str = "aten::mm", kernel_name: str = "gemm_kernel"
) -> dict[str, pa.Table]:
    shapes = json.dumps({"Input Dims": dims, "Input type": [dtype, dtype]})
    op_row = {"name": op, "ts_ns": 0, "dur_ns": 20_000, "args": shapes}
    kernel = {"name": kernel_name, "ts_ns": 100, "dur_ns": 10_000, "category": "kernel", "layer": "device"}
    rows = [op_row, {**kernel, "device": 0, "op_id": 0, "correlation": 1}]
    table = events([{k: v for k, v in r.items() if k != "args"} for r in rows])
    table = table.append_column("args", pa.array([r.get("args", "{}") for r in rows], pa.string()))
    sessions = pa.table({"run": ["r"], "rank": pa.array([0], pa.int32()), "device_name": ["NVIDIA H100 80GB HBM3"]})
    return {"events": table, "sessions": sessions}


def test_gemm_shapes_that_waste_the_tensor_cores_are_named() -> None:
    bf16 = "c10::BFloat16"
    off = _by_op(_gemm_tables([[1001, 1024], [1024, 1002]], bf16))["aten::mm"]
    assert off["shape_waste"] == "M=1001, N=1002 not a multiple of 8"
    assert off["peak_class"] == "bf16_fp16"
    aligned = _by_op(_gemm_tables([[1024, 1024], [1024, 1000]], bf16))["aten::mm"]
    assert aligned["shape_waste"] is None  # 1000 = 125 x 8
    fp8 = _by_op(_gemm_tables([[1024, 1000], [1000, 1024]], "c10::Float8_e4m3fn"))["aten::mm"]
    assert fp8["shape_waste"] == "K=1000 not a multiple of 16" and fp8["peak_class"] == "fp8"
    tiny = _by_op(_gemm_tables([[512, 16, 16], [512, 16, 8]], bf16, "aten::bmm"))["aten::bmm"]
    assert tiny["shape_waste"] == "tiny batched GEMM: 512 products of 16x16 @ 16x8"
    fp32 = _by_op(_gemm_tables([[1000, 1000], [1000, 1000]], "float"))["aten::mm"]
    assert fp32["shape_waste"] is None  # float matmuls do not run on the tensor cores by default


def test_a_float_gemm_on_a_tf32_kernel_is_held_to_the_tf32_peak() -> None:
    square = [[1024, 1024], [1024, 1024]]
    tf32 = "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_256x128_32x3_nn_align1>(Params)"
    assert _by_op(_gemm_tables(square, "float", kernel_name=tf32))["aten::mm"]["peak_class"] == "tf32"
    assert (
        _by_op(_gemm_tables(square, "float", kernel_name="ampere_sgemm_128x64_nn"))["aten::mm"]["peak_class"] == "fp32"
    )

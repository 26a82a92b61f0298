"""The rules against the hardware on small tables built by hand: GEMMs far below their roofline
and GEMM shapes that waste the tensor cores, with the numbers the tables imply, silent on a
well-shaped, well-fed run, on an unknown device and on a CPU-only rank."""

from __future__ import annotations

import json

import pytest

from kinetoscope.findings import RULES, run_rules

from .built import Trace

US, MS = 1_000, 1_000_000
BF16 = "c10::BFloat16"
H100 = "NVIDIA H100 80GB HBM3"  # H100 SXM: bf16 989.5 TFLOP/s dense, 3.35 TB/s


def findings_of(trace: Trace, rule: str, **overrides: float) -> list:
    return run_rules(trace.tables(), {rule: overrides} if overrides else None, [RULES[rule]])


def gemms(trace: Trace, dims: list[list[int]], dtype: str, *, calls: int, kernel_ns: int, op: str = "aten::mm") -> None:
    """``calls`` GEMMs of one shape, each inside an ``aten::linear``, each launching one kernel."""
    shapes = json.dumps({"Input Dims": dims, "Input type": [dtype, dtype]})
    start = max((r["ts_ns"] + r["dur_ns"] for r in trace.rows), default=0)
    for i in range(calls):
        at = start + i * (kernel_ns + 50 * US)
        linear = trace.add("op", "aten::linear", at, 30 * US, args=shapes)
        mm = trace.add("op", op, at + 1 * US, 20 * US, args=shapes, op_id=linear)
        trace.launch("sm90_xmma_gemm_bf16bf16_bf16f32", at + 5 * US, at + 20 * US, kernel_ns, op_id=mm)


def big_gemm_trace(kernel_ns: int, device_name: str = H100) -> Trace:
    trace = Trace()
    trace.device_name = device_name
    gemms(trace, [[4096, 4096], [4096, 4096]], BF16, calls=20, kernel_ns=kernel_ns)
    return trace


FLOPS = 2 * 4096**3
BYTES = 3 * 4096 * 4096 * 2
# compute-bound: 1365 FLOPs per byte x 3.35 TB/s is far above the 989.5 TFLOP/s peak
AT_HALF_NS = FLOPS / (989.5e12 * 0.5) * 1e9  # 277,794 ns a call at 50% of the peak


def test_a_slow_gemm_is_measured_against_its_roofline() -> None:
    # GIVEN 20 bf16 4096³ GEMMs of 2 ms each on an H100 (68.7 TFLOP/s, 6.9% of the bf16 peak)
    (found,) = findings_of(big_gemm_trace(2 * MS), "gemm_below_roofline")
    # THEN one shape, the mm (not the linear above it), its rate, and the gain to 50% of the peak
    (group,) = found.seen["groups"]
    assert (group["op"], group["dtype"], group["calls"], group["bound"]) == ("aten::mm", BF16, 20, "compute")
    assert group["tflops_per_s"] == pytest.approx(FLOPS / (2 * MS) / 1e3, abs=1e-3)
    assert group["attainable_tflops_per_s"] == 989.5 and group["roofline_pct"] == pytest.approx(6.94, abs=0.01)
    assert found.gain_ns == pytest.approx(20 * (2 * MS - AT_HALF_NS), abs=1)
    assert found.seen["device"] == "H100 SXM" and found.severity == "high"
    assert len(found.evidence) == 5 and all(e.name.startswith("sm90_xmma_gemm") for e in found.evidence)
    # a lower bar: under 5% of the roofline, this GEMM is not judged
    assert findings_of(big_gemm_trace(2 * MS), "gemm_below_roofline", max_roofline_pct=5) == []


def test_a_gemm_near_its_roofline_an_unknown_device_and_a_cpu_rank_are_silent() -> None:
    assert findings_of(big_gemm_trace(200 * US), "gemm_below_roofline") == []  # 687 TFLOP/s, 69%
    assert findings_of(big_gemm_trace(2 * MS, device_name="Some Future GPU"), "gemm_below_roofline") == []
    cpu = Trace()
    cpu.device_name = H100
    shapes = json.dumps({"Input Dims": [[4096, 4096], [4096, 4096]], "Input type": [BF16, BF16]})
    cpu.add("op", "aten::mm", 0, 50 * MS, args=shapes)
    assert findings_of(cpu, "gemm_below_roofline") == [] and findings_of(cpu, "tensor_core_shapes") == []


def test_gemms_too_small_to_fill_the_device_are_not_judged() -> None:
    # GIVEN [16,512] @ [512,512] float GEMMs of 25 µs on a V100: 5% of the roofline, but 1.2 µs a call
    # even at the attainable rate, so launch and tail effects rule them
    trace = Trace()
    trace.device_name = "Tesla V100-SXM2-32GB"
    gemms(trace, [[16, 512], [512, 512]], "float", calls=50, kernel_ns=25 * US)
    assert findings_of(trace, "gemm_below_roofline") == []
    assert len(findings_of(trace, "gemm_below_roofline", min_ideal_us=1)) == 1


def test_misaligned_and_tiny_batched_gemms_waste_the_tensor_cores() -> None:
    # GIVEN bf16 GEMMs with M=1001, N=1002 (100 µs each), tiny batched products, and aligned GEMMs
    trace = Trace()
    trace.device_name = H100
    gemms(trace, [[1001, 1024], [1024, 1002]], BF16, calls=10, kernel_ns=100 * US)
    gemms(trace, [[512, 16, 16], [512, 16, 8]], BF16, calls=10, kernel_ns=30 * US, op="aten::bmm")
    gemms(trace, [[1024, 1024], [1024, 1024]], BF16, calls=10, kernel_ns=100 * US)
    (found,) = findings_of(trace, "tensor_core_shapes")
    # THEN both wasteful shapes are named with their time, the aligned one is not
    named = {(g["op"], g["waste"], g["time_ns"]) for g in found.seen["groups"]}
    assert named == {
        ("aten::mm", "M=1001, N=1002 not a multiple of 8", 10 * 100 * US),
        ("aten::bmm", "tiny batched GEMM: 512 products of 16x16 @ 16x8", 10 * 30 * US),
    }
    assert found.seen["gemm_time_ns"] == 1_300 * US
    assert found.seen["pct_of_busy"] == pytest.approx(100 * 1_300 / 2_300, abs=0.01)
    # the gain: each group's time above 50% of its attainable rate
    mm_flops, mm_bytes = 2 * 1001 * 1024 * 1002, (1001 * 1024 + 1024 * 1002 + 1001 * 1002) * 2
    mm_attainable = min(989.5, mm_flops / mm_bytes * 3.35)
    bmm_flops, bmm_bytes = 2 * 512 * 16 * 16 * 8, 512 * (16 * 16 + 16 * 8 + 16 * 8) * 2
    bmm_attainable = min(989.5, bmm_flops / bmm_bytes * 3.35)
    expected = [
        max(10 * 100 * US - int(10 * mm_flops / (mm_attainable * 1e12 * 0.5) * 1e9), 0),
        max(10 * 30 * US - int(10 * bmm_flops / (bmm_attainable * 1e12 * 0.5) * 1e9), 0),
    ]
    assert found.gain_ns == pytest.approx(sum(expected), abs=2)


def test_well_shaped_gemms_are_silent() -> None:
    trace = Trace()
    trace.device_name = H100
    gemms(trace, [[1024, 1024], [1024, 1024]], BF16, calls=10, kernel_ns=100 * US)
    gemms(trace, [[1000, 1000], [1000, 1000]], "float", calls=10, kernel_ns=100 * US)  # fp32 is not checked
    assert findings_of(trace, "tensor_core_shapes") == []


def test_one_shape_is_one_group_whatever_its_scalars() -> None:
    # GIVEN bf16 addmm calls of one shape, half with beta=1 and half with beta=0.5 (Concrete Inputs)
    trace = Trace()
    trace.device_name = H100
    dims = [[4096], [4096, 4096], [4096, 4096], [], []]
    for i, beta in enumerate(["1", "0.5"] * 5):
        args = {
            "Input Dims": dims,
            "Input type": [BF16] * 3 + ["Scalar"] * 2,
            "Concrete Inputs": ["", "", "", beta, "1"],
        }
        op = trace.add("op", "aten::addmm", i * 3 * MS, 30 * US, args=json.dumps(args))
        trace.launch("sm90_xmma_gemm_bf16bf16_bf16f32", i * 3 * MS + 5 * US, i * 3 * MS + 20 * US, 2 * MS, op_id=op)
    (found,) = findings_of(trace, "gemm_below_roofline")
    # THEN one line of ten calls: the scalars change no FLOP
    assert [(g["op"], g["calls"]) for g in found.seen["groups"]] == [("aten::addmm", 10)]

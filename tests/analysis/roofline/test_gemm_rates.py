"""The GEMM groups read only the matrix products: the ops whose FLOPs model keeps a GEMM."""

from __future__ import annotations

import json

from kinetoscope.analysis.roofline import flops
from kinetoscope.analysis.roofline.gemm_rates import GEMM_OPS

F = "c10::BFloat16"
# inputs of the shapes the matrix products, the elementwise ops and the norms take
TRIED = [
    ([[4, 8], [8, 16]], [F, F]),
    ([[16], [4, 8], [8, 16]], [F, F, F]),
    ([[3, 2, 5], [3, 5, 7]], [F, F]),
    ([[3, 2, 7], [3, 2, 5], [3, 5, 7]], [F, F, F]),
    ([[2, 3, 8], [16, 8], [16]], [F, F, F]),
    ([[2, 3, 8], [2, 3, 8]], [F, F]),
    ([[2, 3, 8]], [F]),
]


def has_gemm(op: str) -> bool:
    for dims, types in TRIED:
        found = flops.cost(op, json.dumps(dims), json.dumps(types), None)
        if found is not None and found.gemm is not None:
            return True
    return False


def test_the_gemm_ops_are_the_modelled_ops_with_a_gemm() -> None:
    assert set(GEMM_OPS) <= set(flops.MODELS)
    assert {op for op in flops.MODELS if has_gemm(op)} == set(GEMM_OPS)

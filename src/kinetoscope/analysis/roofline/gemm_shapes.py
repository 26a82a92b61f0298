"""Matrix-product shapes that waste the tensor cores, from a GEMM's batch, M, N, K and dtype.

Tensor cores work on tiles: cuBLAS and CUTLASS reach their peak when M, N and K are multiples of
8 elements for 16-bit types (fp16, bf16) and of 16 for 8-bit types (fp8), NVIDIA's guidance in
its "Matrix Multiplication Background" performance guide (the same 16-byte alignment). A
dimension off the multiple is padded or run on a slower path. The same multiples are checked on
AMD devices, whose guidance is not quoted here. A float32 matmul is checked for multiples of 4
(TF32's 16 bytes) when its kernels are TF32 ones; otherwise not: by default PyTorch runs float
matmuls in full fp32 on the CUDA cores (``allow_tf32`` off), where the tile rule does not apply.

A batched GEMM whose products are tiny (M·N·K below 64³, one 64×64 output tile with K = 64) leaves
most of each tile and of the device empty, whatever its dtype.
"""

from __future__ import annotations

from kinetoscope.analysis.roofline.flops import Gemm

MULTIPLE = {"c10::Half": 8, "c10::BFloat16": 8}
FP8_MULTIPLE = 16
TF32_MULTIPLE = 4
TINY_PRODUCT = 64**3


def multiple_for(dtype: str, tf32: bool = False) -> int | None:
    """The multiple M, N and K should be for ``dtype`` (None: not checked); ``tf32``: a float GEMM
    that ran on TF32 tensor-core kernels."""
    if dtype == "float":
        return TF32_MULTIPLE if tf32 else None
    return FP8_MULTIPLE if "Float8" in dtype else MULTIPLE.get(dtype)


def waste(gemm: Gemm, dtype: str, tf32: bool = False) -> str | None:
    """What about the shape wastes the tensor cores, in words (None: nothing)."""
    found = []
    multiple = multiple_for(dtype, tf32)
    if multiple is not None:
        off = [f"{name}={size}" for name, size in (("M", gemm.m), ("N", gemm.n), ("K", gemm.k)) if size % multiple]
        if off:
            found.append(f"{', '.join(off)} not a multiple of {multiple}")
    if gemm.batch > 1 and gemm.m * gemm.n * gemm.k < TINY_PRODUCT:
        found.append(f"tiny batched GEMM: {gemm.batch} products of {gemm.m}x{gemm.k} @ {gemm.k}x{gemm.n}")
    return "; ".join(found) or None

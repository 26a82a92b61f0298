"""A generated pair for compare mode (``tests/kineto_gen.py``, the accuracy benchmark's fixture
factory): 8 steps of a one-rank GPU training loop with 1 % step jitter, and the same loop with
its first forward GEMM slower by 20 % of the step, every later event shifted."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..kineto_gen import TrainingSpec, write_dataset

SPEC = TrainingSpec(ranks=1, steps=8, layers=4, problems=False, jitter=0.01, seed=7)
STEP_US = 605.0  # one step of SPEC without jitter (benchmarks/diff_accuracy.py)
GEMM = "sm90_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize128x128x32"  # the GEMM made slower


def generated_pair(root: Path) -> tuple[Path, Path]:
    """BASE and NEW datasets: NEW's first forward GEMM of each step 20 % of the step slower."""
    base = write_dataset(root / "base", SPEC)
    slower = dataclasses.replace(SPEC, seed=8, slow_kernel_us=0.2 * STEP_US)
    return base, write_dataset(root / "slower", slower)

"""A real pair for compare mode: one training step captured on CPU, and the same step with an extra
2048x2048 matmul (the captures of tests/cli/test_diff_cli.py), each ingested into its own dataset."""

from __future__ import annotations

from pathlib import Path

import torch

from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.serving.pairing import ComparePair

from ..cli.test_diff_cli import STEPS, capture, training_step

__all__ = ["STEPS", "captured_pair"]


def captured_pair(root: Path) -> ComparePair:
    torch.set_num_threads(1)
    indexes = []
    for name, extra in (("base", False), ("matmul", True)):
        profile = capture(root / name, training_step(256, extra_matmul=extra))
        out = root / f"{name}-ds"
        assert ingest(IngestOptions(profile_dir=profile, out=out)).status == "ok"
        indexes.append(ViewerIndex.open(Dataset(out)))
    return ComparePair(indexes[0], indexes[1], "base", "matmul")

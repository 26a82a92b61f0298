"""Fixtures: small datasets ingested from generated Kineto traces (built once per test session) and their indexes."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.index import ViewerIndex

from ..kineto_gen import TrainingSpec, write_dataset


@pytest.fixture(scope="session")
def multirank_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four ranks, a hostile op name, a dropped-events warning and a truncated file."""
    out = tmp_path_factory.mktemp("multirank") / "ds"
    return write_dataset(out, TrainingSpec(ranks=4, steps=3, layers=6, hostile=True, problems=True))


@pytest.fixture(scope="session")
def multirank(multirank_dir: Path) -> ViewerIndex:
    return ViewerIndex.open(Dataset(multirank_dir))

"""Fixtures: small synthetic datasets (built in the test session) and their viewer indexes."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinetoscope.viewer.dataset import Dataset
from kinetoscope.viewer.index import ViewerIndex
from kinetoscope.viewer.synthetic import SyntheticSpec, write_dataset


@pytest.fixture(scope="session")
def multirank_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four ranks, a hostile op name, a dropped-events warning and a truncated file."""
    out = tmp_path_factory.mktemp("multirank")
    write_dataset(out, SyntheticSpec(ranks=4, steps=3, layers=6, hostile=True, problems=True))
    return out


@pytest.fixture(scope="session")
def multirank(multirank_dir: Path) -> ViewerIndex:
    return ViewerIndex.open(Dataset.open(multirank_dir))

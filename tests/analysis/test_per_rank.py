"""The per-rank analyses computed one rank per task and combined equal each analysis over every rank."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from kinetoscope.analysis import ANALYSES_BY_NAME, TopOptions, needed_columns, run_all
from kinetoscope.analysis.per_rank import RANK_LOCAL, by_rank
from kinetoscope.query import open_dataset
from kinetoscope.query.rank_loaders import rank_keys, rank_loaders

from ..kineto_gen import TrainingSpec, write_dataset


def test_rank_by_rank_equals_all_ranks_at_once(tmp_path: Path) -> None:
    # GIVEN a 3-rank dataset (the last rank a straggler, so ranks differ)
    out = write_dataset(tmp_path / "ds", TrainingSpec(run="train", ranks=3, steps=2, layers=2, problems=True))
    assert rank_keys(out) == [("train", 0), ("train", 1), ("train", 2)]
    # WHEN every per-rank analysis runs one rank per task, and over all ranks at once
    with ThreadPoolExecutor(max_workers=2) as executor:
        combined = by_rank(executor, rank_loaders(out), top=5)
    with open_dataset(out) as dataset:
        tables = dataset.load(needed_columns(tuple(ANALYSES_BY_NAME[n] for n in RANK_LOCAL)))
    # THEN each result is the same, row for row
    assert set(combined) == set(RANK_LOCAL) and len(RANK_LOCAL) >= 15
    for name in RANK_LOCAL:
        alone = run_all(tables, (TopOptions(top=5),), analyses=(ANALYSES_BY_NAME[name],))[name]
        assert combined[name].to_pylist() == alone.to_pylist(), name
    assert set(combined["overview"].column("rank").to_pylist()) == {0, 1, 2}


def test_only_per_rank_analyses_are_computed_rank_by_rank(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=1) as executor, pytest.raises(ValueError, match="stragglers"):
        by_rank(executor, [], ["stragglers"])

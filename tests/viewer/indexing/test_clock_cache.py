"""The run's clocks are worked out once per index and kept beside it: the first page does not wait for them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing import clock_cache, rank_clocks
from kinetoscope.viewer.indexing.index import ViewerIndex, index_path
from kinetoscope.viewer.pages import summaries

from ...kineto_gen import TrainingSpec, write_dataset


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory: pytest.TempPathFactory) -> ViewerIndex:
    out = write_dataset(tmp_path_factory.mktemp("clocks") / "ds", TrainingSpec(ranks=2, steps=2, layers=2))
    return ViewerIndex.open(Dataset(out))


def _kept(index: ViewerIndex) -> Path:
    return index_path(index.dataset).with_suffix(".clocks.json")


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    offsets, ranks = summaries.clock_offsets, rank_clocks.rank_clocks

    def counted_offsets(index: ViewerIndex) -> dict[str, Any]:
        calls.append("clock_offsets")
        return offsets(index)

    monkeypatch.setattr(summaries, "clock_offsets", counted_offsets)
    monkeypatch.setattr(rank_clocks, "rank_clocks", ranks)
    return calls


def test_the_clocks_are_worked_out_once_and_read_back(two_ranks: ViewerIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    _kept(two_ranks).unlink(missing_ok=True)
    calls = _counting(monkeypatch)
    first = clock_cache.clocks(two_ranks)
    again = clock_cache.clocks(two_ranks)
    assert calls == ["clock_offsets"]
    assert again == first == json.loads(json.dumps({**summaries.clock_offsets(two_ranks),
                                                    **rank_clocks.rank_clocks(two_ranks)}))
    assert [r["rank"] for r in first["rank_clocks"]] == [0, 1]


@pytest.mark.parametrize("text", ["{not json", '{"fingerprint": "another index", "clocks": {}}', "[]"])
def test_a_damaged_or_foreign_file_is_worked_out_again(
    two_ranks: ViewerIndex, monkeypatch: pytest.MonkeyPatch, text: str
) -> None:
    _kept(two_ranks).write_text(text)
    calls = _counting(monkeypatch)
    found = clock_cache.clocks(two_ranks)
    assert calls == ["clock_offsets"] and [r["rank"] for r in found["rank_clocks"]] == [0, 1]
    assert json.loads(_kept(two_ranks).read_text())["clocks"] == found

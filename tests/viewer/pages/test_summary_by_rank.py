"""The Summary and Findings pages of a large dataset are made rank by rank (``report.rank_by_rank``),
in one pass for both, and say what every rank at once says."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kinetoscope.report import rank_by_rank, settings
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.pages import summaries


@pytest.fixture
def fresh() -> Iterator[None]:
    summaries.forget_made()
    yield
    summaries.forget_made()


def _pages(index: ViewerIndex) -> Any:
    return json.loads(json.dumps([summaries.summary(index), summaries.findings(index)]))


def test_a_large_datasets_pages_come_from_one_pass_rank_by_rank(
    multirank: ViewerIndex, monkeypatch: pytest.MonkeyPatch, fresh: None
) -> None:
    # GIVEN the four-rank dataset (a hostile op name, dropped events, a truncated file), read at once
    at_once = _pages(multirank)
    assert at_once[0]["analyses"] and at_once[1]["findings"]
    seen: list[Any] = []
    share: Callable[..., Any] = rank_by_rank.RankPlan.share

    def counted(*args: Any) -> Any:
        seen.append(args[-1])
        return share(*args)

    monkeypatch.setattr(rank_by_rank.RankPlan, "share", counted)
    # WHEN the threshold falls under its events
    summaries.forget_made()
    monkeypatch.setattr(settings, "BY_RANK_EVENTS", 1)
    by_rank = _pages(multirank)
    # THEN both pages came from one read of each rank, and say the same
    assert sorted(rank for _, rank in seen) == [0, 1, 2, 3]
    assert by_rank == at_once


def test_a_small_dataset_is_read_at_once(multirank: ViewerIndex, monkeypatch: pytest.MonkeyPatch, fresh: None) -> None:
    def refused(*_: Any) -> Any:
        raise AssertionError("read rank by rank")

    monkeypatch.setattr(rank_by_rank, "summarised", refused)
    assert summaries.summary(multirank)["analyses"]

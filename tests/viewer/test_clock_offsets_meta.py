"""/api/meta's clock offsets, and what it says when the dataset cannot give them."""

from __future__ import annotations

import duckdb
import pytest

from kinetoscope.viewer import summaries
from kinetoscope.viewer.index import ViewerIndex


def test_meta_offsets_are_one_row_per_rank_with_collectives(multirank: ViewerIndex) -> None:
    # the synthetic four-rank dataset: one host, collectives on every rank
    found = summaries.clock_offsets(multirank)
    assert set(found) == {"clock_offsets"} and [r["rank"] for r in found["clock_offsets"]] == [0, 1, 2, 3]
    assert all(r["clock"] == "reference" and not r["applied"] and r["samples"] > 0 for r in found["clock_offsets"])


def test_meta_says_why_there_are_no_offsets(multirank: ViewerIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    def unreadable(*_: object) -> None:
        raise duckdb.BinderException('Referenced column "args" not found')

    monkeypatch.setattr(summaries, "collective_tables", unreadable)
    found = summaries.clock_offsets(multirank)
    assert found["clock_offsets"] == []
    assert (
        found["clock_offsets_error"].startswith("cannot read the collective rows:")
        and "args" in found["clock_offsets_error"]
    )

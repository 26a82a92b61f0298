"""/api/meta's clock offsets, and what it says when the dataset cannot give them."""

from __future__ import annotations

import duckdb
import pytest

from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.pages import summaries


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


def test_rank_clocks_are_each_ranks_own_offset_from_the_lowest_rank(multirank: ViewerIndex) -> None:
    from kinetoscope.viewer.indexing.rank_clocks import rank_clocks

    found = rank_clocks(multirank)["rank_clocks"]
    assert [r["rank"] for r in found] == [0, 1, 2, 3] and found[0]["offset_ns"] == 0
    assert all(r["samples"] > 0 and r["uncertainty_ns"] is not None for r in found)
    # against the analysis: each rank's median end difference from the host's ranks, less rank 0's
    measured = {r["rank"]: r["measured_ns"] for r in summaries.clock_offsets(multirank)["clock_offsets"]}
    own = [measured[1] - measured[0], measured[2] - measured[0]]
    assert [r["offset_ns"] for r in found[1:3]] == own == [7000, 14000]
    assert abs(found[3]["offset_ns"] - (measured[3] - measured[0])) <= found[3]["uncertainty_ns"]


def test_rank_clocks_say_why_there_are_none(multirank: ViewerIndex, monkeypatch: pytest.MonkeyPatch) -> None:
    from kinetoscope.viewer.indexing import rank_clocks

    def unreadable(*_: object) -> None:
        raise duckdb.BinderException('Referenced column "args" not found')

    monkeypatch.setattr(rank_clocks, "collective_tables", unreadable)
    found = rank_clocks.rank_clocks(multirank)
    assert found["rank_clocks"] == [] and "args" in found["rank_clocks_error"]

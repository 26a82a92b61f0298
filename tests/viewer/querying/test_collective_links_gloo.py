"""/api/collective on a real two-rank gloo job captured here (rank 1 late by 30 ms every step)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinetoscope.model import kinds
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying.collective_links import CollectiveLinks

from ...golden.test_collectives_gloo import LATE_MS, job

pytestmark = [pytest.mark.slow, pytest.mark.serial]
__all__ = ["job"]  # the captured job, a module fixture


def test_a_gloo_all_reduce_links_both_ranks_and_shows_who_waited(job: Path) -> None:
    index = ViewerIndex.open(Dataset(job / "ds"))
    with Dataset(job / "ds") as dataset:
        sql = "SELECT id, rank, ts_ns, dur_ns FROM events WHERE kind = $c AND name = 'gloo:all_reduce' ORDER BY ts_ns"
        rows = dataset.sql(sql, {"c": kinds.COLLECTIVE}).to_pylist()
    first = next(r for r in rows if r["rank"] == 0)
    found = CollectiveLinks(index).instance(int(first["id"]))
    assert found["collective"] == "allreduce" and [r["rank"] for r in found["ranks"]] == [0, 1]
    other = next(r for r in found["ranks"] if r["rank"] == 1)
    assert any(r["id"] == other["id"] and r["rank"] == 1 for r in rows)  # rank 1's own gloo:all_reduce
    mine = next(r for r in found["ranks"] if r["rank"] == 0)
    assert mine["dur"] == first["dur_ns"] and mine["ts"] == first["ts_ns"] - index.t0_ns
    # rank 1 sleeps before the collective: it arrives late, and rank 0 waits for it inside the call
    assert other["skew_ns"] >= 0.8 * LATE_MS * 1e6 and mine["skew_ns"] == 0
    assert mine["wait_ns"] >= 0.8 * LATE_MS * 1e6 and other["wait_ns"] == 0

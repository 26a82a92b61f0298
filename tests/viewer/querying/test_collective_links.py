"""/api/collective: one collective instance on every rank, by any of its rows' event ids."""

from __future__ import annotations

from kinetoscope.model import kinds
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying.collective_links import CollectiveLinks


def test_every_rank_of_an_instance_finds_the_same_instance(multirank: ViewerIndex) -> None:
    links = CollectiveLinks(multirank)
    with Dataset(multirank.dataset.path) as dataset:
        sql = "SELECT id FROM events WHERE kind = $kernel AND coalesce(collective, '') <> '' ORDER BY ts_ns"
        kernels = dataset.sql(sql, {"kernel": kinds.KERNEL}).to_pylist()
    assert kernels
    first = links.instance(int(kernels[0]["id"]))
    ids = sorted(r["id"] for r in first["ranks"])
    assert [r["rank"] for r in first["ranks"]] == [0, 1, 2, 3]  # the synthetic run's four ranks
    for event_id in ids:
        assert sorted(r["id"] for r in links.instance(event_id)["ranks"]) == ids
    starts = [r["ts"] for r in first["ranks"]]
    assert [r["skew_ns"] for r in first["ranks"]] == [s - min(starts) for s in starts]
    shortest = min(r["dur"] for r in first["ranks"])
    assert [r["wait_ns"] for r in first["ranks"]] == [r["dur"] - shortest for r in first["ranks"]]
    assert first["latency_ns"] == shortest


def test_an_event_that_is_no_collective_gets_the_reason(multirank: ViewerIndex) -> None:
    with Dataset(multirank.dataset.path) as dataset:
        op = dataset.sql("SELECT id FROM events WHERE kind = $op LIMIT 1", {"op": kinds.OP}).to_pylist()[0]["id"]
    found = CollectiveLinks(multirank).instance(int(op))
    assert found["ranks"] == [] and found["reason"].startswith("not a collective matched across ranks")

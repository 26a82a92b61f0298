"""The viewer draws the dataset's tracks and lanes (``model.tracks``), not tracks of its own."""

from __future__ import annotations

from typing import Any

import pytest

from kinetoscope.cli import main
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying import queries
from kinetoscope.viewer.querying.window import WindowRequest, query_window

from ..ingest.helpers import DATA

MAIN = "thread 59811 (python3)"  # rank 0's main thread, as its thread_name metadata names it


@pytest.fixture(scope="module")
def dlrm_rank0(tmp_path_factory: pytest.TempPathFactory) -> ViewerIndex:
    """Rank 0 of the DLRM traces of tests/data, through `kinetoscope import` and `ingest`."""
    root = tmp_path_factory.mktemp("dlrm0")
    (trace,) = sorted((DATA / "dlrm_8rank").glob("worker0_*.json.gz"))
    assert main(["import", str(trace), "--out", str(root / "prof")]) == 0
    assert main(["ingest", str(root / "prof"), "--out", str(root / "ds")]) == 0
    return ViewerIndex.open(Dataset(root / "ds"))


def by_name(index: ViewerIndex) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in queries.meta(index)["tracks"]}


def test_runtime_calls_have_their_own_track_and_lanes(dlrm_rank0: ViewerIndex) -> None:
    tracks = by_name(dlrm_rank0)
    # the framework thread nests 10 deep; its runtime calls overlap at most two at a time
    assert tracks[MAIN]["layer"] == "framework" and tracks[MAIN]["lanes"] == 10
    runtime = tracks[f"{MAIN} · runtime"]
    assert runtime["layer"] == "runtime" and runtime["lanes"] == 2 and runtime["tid"] == 59811
    assert tracks[f"{MAIN} · collectives"]["lanes"] == 1
    # every event is drawn on a lane its track has
    data = query_window(dlrm_rank0, WindowRequest(start_ns=0, end_ns=dlrm_rank0.span_ns + 1, width_px=100_000,
                                                  tracks=(runtime["id"],)))
    assert data["slices"]["lane"].size and set(data["slices"]["lane"].tolist()) == {0, 1}
    assert int(data["slices"]["lane"].size) + int(data["blocks"]["count"].sum()) == runtime["events"]


def test_tracks_are_named_and_ordered_as_the_dataset_draws_them(dlrm_rank0: ViewerIndex) -> None:
    names = [t["name"] for t in queries.meta(dlrm_rank0)["tracks"]]
    assert names[:3] == [MAIN, f"{MAIN} · runtime", f"{MAIN} · collectives"]  # a thread's rows stay together
    assert names[3].startswith("thread 59976 (") and names[-1].startswith("stream ")
    assert all(t["pid"] == 59811 for t in queries.meta(dlrm_rank0)["tracks"])  # one process group, no pid -1


def test_synchronizations_and_allocators_join_their_process(multirank: ViewerIndex) -> None:
    tracks = queries.meta(multirank)["tracks"]
    memory = [t for t in tracks if t["name"].startswith("memory ·")]
    assert memory and all(t["pid"] == 4000 + 10 * t["rank"] for t in memory)
    assert {t["pid"] for t in tracks} == {4000, 4010, 4020, 4030}

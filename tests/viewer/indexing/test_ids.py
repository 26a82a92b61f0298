"""Event ids past 2^53 (rank 8192 and up) reach the page exact: the API sends every event id, and the
other 64-bit ids of an event, as decimal strings, read here as a browser reads JSON (every number a
float64)."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex

from ...ingest.helpers import annotated_step, kernel, write_session, x
from ..helpers import running_server

RANK = 8192  # rank << 40 is 2^53: every id of this rank is past what a float64 holds exactly
EVENT_ID_FIELDS = ("id", "parent_id", "op_id", "launch_id")


def as_page_reads(body: bytes) -> Any:
    """JSON as a browser's JSON.parse reads it: every number a float64."""
    return json.loads(body, parse_int=float)


def page_text(value: Any) -> str:
    """The text the page sends back for an id it holds (JavaScript's String() of a number or a string)."""
    return value if isinstance(value, str) else str(int(value))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("rank8192")
    events = [*annotated_step(), x("aten::mm", 40, 30), x("cudaLaunchKernel", 45, 5, cat="cuda_runtime", correlation=9),
              kernel("gemm_kernel", 50, 10, correlation=9)]
    write_session(root / "prof", events, rank=RANK, world_size=RANK + 1)
    report = ingest(IngestOptions(profile_dir=root / "prof", out=root / "ds"))
    assert report.status == "ok", [o.message for o in report.outcomes]
    return root / "ds"


@pytest.fixture(scope="module")
def exact(dataset: Path) -> dict[int, dict[str, Any]]:
    """The dataset's events by id, as integers."""
    with Dataset(dataset) as opened:
        rows = opened.sql("SELECT * FROM events").to_pylist()
    assert rows and min(r["id"] for r in rows) >= 2**53
    return {r["id"]: r for r in rows}


@pytest.fixture(scope="module")
def base(dataset: Path) -> Iterator[str]:
    with running_server(ViewerIndex.open(Dataset(dataset))) as url:
        yield url


def get(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=30) as response:
        return as_page_reads(response.read())


def window_ids(base: str) -> list[str]:
    meta = get(base, "/api/meta")
    tracks = ",".join(str(int(t["id"])) for t in meta["tracks"])
    found = get(base, f"/api/window?start=0&end={int(meta['span_ns'])}&px=8000&tracks={tracks}")
    return [page_text(i) for i in found["slices"]["id"]]


def test_the_window_and_search_give_every_event_its_exact_id(base: str, exact: dict[int, dict[str, Any]]) -> None:
    shown = window_ids(base)
    assert sorted(int(i) for i in shown) == sorted(exact)
    hits = get(base, "/api/search?q=aten::sum")["hits"]
    named = sorted(i for i, r in exact.items() if r["name"] == "aten::sum")
    assert sorted(int(page_text(h["id"])) for h in hits) == named
    meta = get(base, "/api/meta")
    tracks = ",".join(str(int(t["id"])) for t in meta["tracks"])
    matched = get(base, f"/api/matches?q=aten::sum&start=0&end={int(meta['span_ns'])}&tracks={tracks}")["ids"]
    assert sorted(int(page_text(i)) for i in matched) == sorted(int(page_text(h["id"])) for h in hits)


def test_details_of_each_event_name_it_and_the_events_it_joins(base: str, exact: dict[int, dict[str, Any]]) -> None:
    for text in window_ids(base):
        details = get(base, f"/api/event/{text}")
        row = exact[int(text)]
        assert page_text(details["id"]) == text and details["name"] == row["name"]
        for field in (*EVENT_ID_FIELDS, "track_id", "correlation", "external_id"):
            assert int(page_text(details["fields"][field])) == row[field], field


def test_flows_name_the_events_at_both_ends(base: str, exact: dict[int, dict[str, Any]]) -> None:
    gemm = next(i for i, r in exact.items() if r["name"] == "gemm_kernel")
    chain = get(base, f"/api/flows/{gemm}")
    assert page_text(chain["event"]["id"]) == str(gemm)
    launch = next(i for i, r in exact.items() if r["name"] == "cudaLaunchKernel" and r["correlation"] == 9)
    assert [int(page_text(b["id"])) for b in chain["upstream"]][:1] == [launch]
    assert (str(launch), str(gemm)) in {(page_text(e["src"]), page_text(e["dst"])) for e in chain["edges"]}
    after = get(base, f"/api/neighbour/{launch}?dir=prev")
    assert after is None or int(page_text(after["id"])) in exact


def test_a_collective_answer_names_the_event_asked_about(base: str, exact: dict[int, dict[str, Any]]) -> None:
    event_id = max(i for i in exact if i % 2)  # odd: the nearest float64 is another id
    assert page_text(get(base, f"/api/collective/{event_id}")["event_id"]) == str(event_id)

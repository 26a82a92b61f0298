"""The viewer's API over a run whose traces were recorded in different years: the first timeline
request (the whole span, over 2^53 ns) is answered, with the events of every rank."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kinetoscope.importer import trace_import as imp
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex

from ..helpers import running_server
from ..test_api import api

YEAR_NS = 365 * 24 * 3600 * 10**9


def _trace(path: Path, rank: int, base_ns: int) -> Path:
    events = []
    for i in range(5):
        events.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 10 + rank, "tid": 1, "ts": 1000 + 10 * i,
                       "dur": 5})
    trace = {"schemaVersion": 1, "distributedInfo": {"rank": rank, "world_size": 2}, "traceEvents": events,
             "baseTimeNanoseconds": base_ns}
    path.write_text(json.dumps(trace))
    return path


@pytest.fixture(scope="module")
def years_apart(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("years")
    for rank, base_ns in ((0, 1_700_000_000 * 10**9), (1, 1_700_000_000 * 10**9 + YEAR_NS)):
        imp.import_trace(_trace(root / f"r{rank}.json", rank, base_ns), imp.ImportOptions(out_dir=root / "prof"))
    ingest(IngestOptions(profile_dir=root / "prof", out=root / "ds", run="run"))
    with running_server(ViewerIndex.open(Dataset(root / "ds"))) as url:
        yield url


def test_the_first_window_of_a_run_spanning_years_is_answered(years_apart: str) -> None:
    # GIVEN a run whose two ranks were recorded a year apart (a span beyond 2^53 ns)
    meta = api(years_apart, "/api/meta")
    assert int(meta["span_ns"]) > YEAR_NS > 2**53
    ids = ",".join(str(track["id"]) for track in meta["tracks"])
    # WHEN the page asks for the whole span, then for the last rank's events
    whole = api(years_apart, "/api/window", start=0, end=meta["span_ns"], px=1200, tracks=ids)
    late = api(years_apart, "/api/window", start=YEAR_NS, end=meta["span_ns"], px=1200, tracks=ids)
    # THEN both are answered (before: a 400, the end beyond 2^53), the latter with the late rank's slices
    assert whole["end_ns"] == int(meta["span_ns"])
    assert len(late["slices"]["id"]) == 5

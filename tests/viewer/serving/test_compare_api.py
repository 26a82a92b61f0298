"""Compare mode's server side: NEW's API under /new, the steps and the diff at /api/compare, and the
single-dataset viewer unchanged without a pair."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinetoscope import CommandError
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.serving.pairing import ComparePair

from ...conftest import PYTHON, python_env
from ..compare_pair import STEPS, captured_pair
from ..helpers import running_server, sign_in


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> ComparePair:
    return captured_pair(tmp_path_factory.mktemp("compare"))


@pytest.fixture(scope="module")
def server(pair: ComparePair) -> Iterator[str]:
    with running_server(pair.base, pair=pair) as url:
        yield url


def api(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=120) as response:
        return json.loads(response.read())


def test_both_sides_are_served_and_the_diff_ranks_the_matmul_first(server: str, pair: ComparePair) -> None:
    base_meta, new_meta = api(server, "/api/meta"), api(server, "/new/api/meta")
    assert base_meta["compare"] == {"base": "base", "new": "matmul", "side": "base"}
    assert new_meta["compare"]["side"] == "new"
    assert base_meta["event_count"] == pair.base.event_count and new_meta["event_count"] == pair.new.event_count
    assert base_meta["event_count"] != new_meta["event_count"]  # one more mm (and its children) a step
    report = api(server, "/api/compare")
    # each side's steps, as offsets from its own run start, in order and within its span
    for side, meta in (("base", base_meta), ("new", new_meta)):
        steps = report[side]["steps"]
        assert [s["step"] for s in steps] == list(range(1, STEPS + 1))
        assert all(0 <= s["start_ns"] < s["end_ns"] <= meta["span_ns"] for s in steps)
        assert [s["start_ns"] for s in steps] == sorted(s["start_ns"] for s in steps)
    scope = report["diff"]["scopes"][0]
    assert report["diff"]["version"] == 4
    assert (scope["ops"][0]["name"], scope["ops"][0]["match"]) == ("aten::mm", "matched")
    # NEW's window API answers NEW's events: the extra mm shows in its step, not in BASE's
    step = report["new"]["steps"][1]
    hits = api(server, "/new/api/search?q=aten%3A%3Amm&limit=1000")
    base_hits = api(server, "/api/search?q=aten%3A%3Amm&limit=1000")
    assert hits["total"] > base_hits["total"]
    assert any(step["start_ns"] <= h["ts"] <= step["end_ns"] for h in hits["hits"])


def test_without_a_pair_there_is_no_compare_route(multirank: ViewerIndex) -> None:
    with running_server(multirank) as url:
        assert "compare" not in api(url, "/api/meta")
        for path in ("/api/compare", "/new/api/meta"):
            with pytest.raises(urllib.error.HTTPError) as err:
                api(url, path)
            assert err.value.code == 404


def test_a_dataset_of_two_runs_is_refused_by_name(pair: ComparePair) -> None:
    # GIVEN both captures ingested into one dataset as runs a and b
    root = Path(pair.base.dataset.path).parent
    both = root / "both"
    for run, name in (("a", "base"), ("b", "matmul")):
        assert ingest(IngestOptions(profile_dir=root / name, out=both, run=run)).status == "ok"
    # THEN compare mode refuses it as a side, naming it and its runs
    with pytest.raises(CommandError, match=r"two-runs: 2 runs \(a, b\); compare mode needs one run a side"):
        ComparePair(ViewerIndex.open(Dataset(both)), pair.new, "two-runs", "matmul")


def test_kinetoscope_view_compare_serves_the_pair(pair: ComparePair) -> None:
    # GIVEN `kinetoscope view BASE --compare NEW` run as a user runs it, on the two datasets
    command = [PYTHON, "-m", "kinetoscope", "view", str(pair.base.dataset.path), "--compare",
               str(pair.new.dataset.path), "--no-browser", "--port", "0"]
    process = subprocess.Popen(command, env=python_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None
        lines = []
        for line in process.stdout:  # until the URL is printed (the process then serves until stopped)
            lines.append(line)
            if "kinetoscope viewer: http" in line:
                break
        url = next(word for word in lines[-1].split() if word.startswith("http"))
        # THEN the printed URL opens the Compare page, and the session its code gives reaches both sides
        assert url.endswith("&page=compare"), url
        base_url, session = sign_in(url)
        base_url = base_url.rstrip("/")

        def fetch(path: str) -> Any:
            request = urllib.request.Request(base_url + path, headers=session)
            with urllib.request.urlopen(request, timeout=120) as response:
                return json.loads(response.read())

        deadline = time.monotonic() + 300  # view answers at once and prepares both sides behind /api/progress
        while not fetch("/api/progress")["ready"]:
            assert time.monotonic() < deadline, "not ready within 300 s"
            time.sleep(0.2)
        report = fetch("/api/compare")
        assert report["base"]["label"] == str(pair.base.dataset.path)
        assert report["diff"]["scopes"][0]["ops"][0]["name"] == "aten::mm"
        assert fetch("/new/api/meta")["event_count"] == pair.new.event_count
    finally:
        process.terminate()
        process.wait(timeout=30)

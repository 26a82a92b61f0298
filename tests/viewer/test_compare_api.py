"""Compare mode's server side: NEW's API under /new, the steps and the diff at /api/compare, and the
single-dataset viewer unchanged without a pair."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kinetoscope.viewer.index import ViewerIndex
from kinetoscope.viewer.pairing import ComparePair

from .compare_pair import STEPS, captured_pair
from .helpers import running_server


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
    assert report["diff"]["version"] == 2
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

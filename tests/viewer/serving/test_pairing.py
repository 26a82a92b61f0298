"""Compare mode's server side on a generated pair: ``/api/compare`` carries the verdict, the
comparability check and the waterfall of ``diff --json`` (each row behind a part with the event name
it stands for), and ``/api/compare/events`` finds the first event of a name in a step on each side."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.serving.pairing import ComparePair, event_name

from ..generated_pair import GEMM, generated_pair
from ..helpers import running_server


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> ComparePair:
    base, slower = generated_pair(tmp_path_factory.mktemp("pairing"))
    return ComparePair(ViewerIndex.open(Dataset(base)), ViewerIndex.open(Dataset(slower)), "base", "slower")


@pytest.fixture(scope="module")
def server(pair: ComparePair) -> Iterator[str]:
    with running_server(pair.base, pair=pair) as url:
        yield url


def api(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=120) as response:
        return json.loads(response.read())


def test_a_shape_row_stands_for_its_op_and_other_rows_for_their_name() -> None:
    assert event_name({"what": "shape", "name": "aten::mm [[64, 256], [256, 256]]"}) == "aten::mm"
    assert event_name({"what": "kernel", "name": "void k<float>(int) [clone]"}) == "void k<float>(int) [clone]"
    assert event_name({"what": "module", "name": "nn.Module: Linear_0"}) == "nn.Module: Linear_0"


def test_the_report_answers_the_verdict_and_a_waterfall_with_the_slower_gemm_first(server: str) -> None:
    diff = api(server, "/api/compare")["diff"]
    # THEN the same answer as `diff --json`: a regression, comparable, device compute first, the GEMM behind it
    assert diff["verdict"]["verdict"] == "regression", diff["verdict"]
    assert diff["comparability"]["comparable"] is True
    first = diff["waterfall"]["parts"][0]
    assert first["part"] == "device_compute"
    assert (first["behind"][0]["name"], first["behind"][0]["event_name"]) == (GEMM, GEMM)
    parts_ns = sum(p["delta_ns"] for p in diff["waterfall"]["parts"])
    assert parts_ns == pytest.approx(diff["waterfall"]["total_delta_ns"], abs=1)


def test_the_first_event_of_a_name_in_a_step_is_found_on_each_side(server: str, pair: ComparePair) -> None:
    report = pair.report()
    query = urllib.parse.urlencode({"base": GEMM, "new": GEMM, "step": 3})
    found = api(server, f"/api/compare/events?{query}")
    for side in ("base", "new"):
        step = next(s for s in report[side]["steps"] if s["step"] == 3)
        brief = found[side]
        # THEN the GEMM, inside that side's step 3, and no GEMM of that step starts before it
        assert brief["name"] == GEMM and isinstance(brief["id"], str)
        assert step["start_ns"] <= brief["ts"] < step["end_ns"]
        index = pair.base if side == "base" else pair.new
        earlier = index.cursor().execute(
            "SELECT count(*) FROM ev JOIN names ON names.name_id = ev.name"
            " WHERE names.name = ? AND ev.ts >= ? AND ev.ts < ?",
            [GEMM, step["start_ns"], brief["ts"]]).fetchone()
        assert earlier == (0,)
    # AND the slower GEMM lasts longer in NEW
    assert found["new"]["dur"] > found["base"]["dur"]


def test_a_name_a_side_lacks_is_none_there(server: str) -> None:
    query = urllib.parse.urlencode({"base": GEMM, "new": "no such kernel", "step": 1})
    found = api(server, f"/api/compare/events?{query}")
    assert found["base"]["name"] == GEMM and found["new"] is None
    # and a step neither side has: the first event anywhere
    query = urllib.parse.urlencode({"base": GEMM, "new": GEMM, "step": 999})
    assert api(server, f"/api/compare/events?{query}")["base"]["name"] == GEMM

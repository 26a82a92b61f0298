"""Framework tracks without their Python frames (`ev_ops`): each op in the lane of its depth among ops."""

from __future__ import annotations

import subprocess

import pytest

from kinetoscope.cli import main
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying import queries
from kinetoscope.viewer.querying.window import WindowRequest, query_window

from ..conftest import PYTHON, python_env
from ..ingest.helpers import write_session, x


@pytest.fixture(scope="module")
def stacked(tmp_path_factory: pytest.TempPathFactory) -> ViewerIndex:
    # A step holding two Python frames, then aten::linear -> (frame) -> aten::addmm; aten::relu directly
    # under the step's first frame; an instant inside aten::addmm; a second thread without Python frames
    root = tmp_path_factory.mktemp("ops")
    events = [
        x("ProfilerStep#1", 0, 100, cat="user_annotation"),
        x("train.py(10): step", 1, 98, cat="python_function"),
        x("model.py(20): forward", 2, 70, cat="python_function"),
        x("aten::linear", 3, 60),
        x("linear.py(5): forward", 4, 50, cat="python_function"),
        x("aten::addmm", 5, 40),
        {"ph": "i", "cat": "cpu_instant_event", "name": "mark", "pid": 4242, "tid": 1, "ts": 20, "s": "t"},
        x("aten::relu", 85, 10),
        x("aten::mul", 0, 10, tid=2),
    ]
    write_session(root / "profile", events)
    assert main(["ingest", str(root / "profile"), "--out", str(root / "ds")]) == 0
    return ViewerIndex.open(Dataset(root / "ds"))


def _framework(index: ViewerIndex, tid: int) -> dict:
    return next(t for t in queries.meta(index)["tracks"] if t["layer"] == "framework" and t["tid"] == tid)


def _lanes(index: ViewerIndex, track: int, ops: bool) -> dict[str, int]:
    data = query_window(index, WindowRequest(start_ns=0, end_ns=100_000, width_px=100_000, tracks=(track,),
                                             ops_tracks=(track,) if ops else ()))
    slices = data["slices"]
    return {data["strings"][n]: int(lane) for n, lane in zip(slices["name"], slices["lane"], strict=True)}


def test_hiding_python_frames_packs_ops_by_their_depth_among_ops(stacked: ViewerIndex) -> None:
    main_track, other = _framework(stacked, 1), _framework(stacked, 2)
    with_frames = _lanes(stacked, main_track["id"], ops=False)
    assert with_frames["aten::addmm"] == 5 and with_frames["aten::relu"] == 2
    # THEN without frames each op sits at its depth among the rows left, the instant inside aten::addmm
    assert _lanes(stacked, main_track["id"], ops=True) == {
        "ProfilerStep#1": 0, "aten::linear": 1, "aten::addmm": 2, "mark": 3, "aten::relu": 1}
    # AND the track says how many lanes that needs; a thread without Python frames has no such form
    assert main_track["ops_lanes"] == 4 and main_track["lanes"] > 4 and other["ops_lanes"] == 0
    # AND an event's brief says where it is drawn either way
    ids = [int(i) for i in stacked.cursor().execute("SELECT id FROM ev").fetchnumpy()["id"]]
    briefs = queries.event_brief(stacked, ids)
    addmm = next(b for b in briefs.values() if b["name"] == "aten::addmm")
    frame = next(b for b in briefs.values() if b["name"] == "model.py(20): forward")
    assert (addmm["lane"], addmm["ops_lane"]) == (5, 2) and frame["ops_lane"] == -1


def test_a_window_reads_each_track_from_its_own_table(stacked: ViewerIndex) -> None:
    main_track, other = _framework(stacked, 1)["id"], _framework(stacked, 2)["id"]
    data = query_window(stacked, WindowRequest(start_ns=0, end_ns=100_000, width_px=100_000,
                                               tracks=(main_track, other), ops_tracks=(main_track,)))
    names = sorted(data["strings"][n] for n in data["slices"]["name"])
    assert names == sorted(["ProfilerStep#1", "aten::linear", "aten::addmm", "mark", "aten::relu", "aten::mul"])


CAPTURE = """
import sys
import torch
from torch.profiler import ProfilerActivity, profile

model = torch.nn.Sequential(*(torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.GELU()) for _ in range(4)))
x = torch.randn(32, 64)
model(x).sum().backward()  # warm-up
with profile(activities=[ProfilerActivity.CPU], with_stack=True, record_shapes=True) as prof:
    for _ in range(2):
        model(x).sum().backward()
prof.export_chrome_trace(sys.argv[1])
"""


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> ViewerIndex:
    """A real CPU torch.profiler capture with Python stacks, imported and ingested as a user would."""
    pytest.importorskip("torch")
    root = tmp_path_factory.mktemp("captured")
    trace = root / "trace.json"
    subprocess.run([PYTHON, "-c", CAPTURE, str(trace)], check=True, env=python_env(), timeout=600)
    assert main(["import", str(trace), "--out", str(root / "prof")]) == 0
    assert main(["ingest", str(root / "prof"), "--out", str(root / "ds")]) == 0
    return ViewerIndex.open(Dataset(root / "ds"))


def test_a_with_stack_capture_loses_its_python_lanes_and_keeps_op_nesting(captured: ViewerIndex) -> None:
    # GIVEN the thread that ran the model (the framework track with the most lanes)
    track = max((t for t in queries.meta(captured)["tracks"] if t["layer"] == "framework"), key=lambda t: t["lanes"])
    # THEN without Python frames it needs a fraction of the lanes
    assert track["lanes"] >= 12 and 0 < track["ops_lanes"] <= track["lanes"] // 2
    # AND each row's ops-only lane is its number of non-Python ancestors, counted from the dataset's parent_id
    con = captured.cursor()
    run, rank, source = con.execute("SELECT run, rank, source_id FROM view_tracks WHERE track_id = ?",
                                    [track["id"]]).fetchone()
    rows = con.execute("SELECT id, parent_id, kind FROM events WHERE run = ? AND rank = ? AND track_id = ?",
                       [run, rank, source]).fetchall()
    parent = {i: p for i, p, _ in rows}
    python = {i for i, _, k in rows if k == "python"}

    def depth(i: int) -> int:
        n, at = 0, parent[i]
        while at in parent:
            n += at not in python
            at = parent[at]
        return n

    expected = {i: depth(i) for i, _, _ in rows if i not in python}
    lanes = dict(con.execute("SELECT id, lane FROM ev_ops WHERE track = ?", [track["id"]]).fetchall())
    assert len(expected) > 100 and lanes == expected


def test_an_area_over_a_whole_capture_matches_summary_top_ops(captured: ViewerIndex) -> None:
    from kinetoscope.analysis import needed_columns
    from kinetoscope.analysis.ops.host import top_ops
    from kinetoscope.analysis.settings.options import TopOptions
    from kinetoscope.viewer.querying import area

    with Dataset(captured.dataset.path) as dataset:
        expected = {r["name"]: (r["calls"], r["self_ns"], r["total_ns"])
                    for r in top_ops(dataset.load(needed_columns()), TopOptions(top=100_000)).to_pylist()}
    tracks = [int(r[0]) for r in captured.cursor().execute("SELECT track_id FROM view_tracks").fetchall()]
    rows = area.area_summary(captured, 0, captured.span_ns + 1, tracks, "ops")["aggregate"]["rows"]
    got = {r["name"]: (r["count"], r["self_ns"], r["total_ns"]) for r in rows}
    # THEN every op that summary does not fold into a same-named parent has summary's calls, self and total
    same_calls = [name for name in expected if name in got and got[name][0] == expected[name][0]]
    assert len(same_calls) >= 0.8 * len(expected) > 10
    assert {k: got[k] for k in same_calls} == {k: expected[k] for k in same_calls}



def test_meta_says_whether_the_trace_was_recorded_with_stacks(
    stacked: ViewerIndex, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # GIVEN a trace with Python frames and one without
    root = tmp_path_factory.mktemp("no-stacks")
    write_session(root / "profile", [x("ProfilerStep#1", 0, 100, cat="user_annotation"), x("aten::mm", 5, 40)])
    assert main(["ingest", str(root / "profile"), "--out", str(root / "ds")]) == 0
    plain = ViewerIndex.open(Dataset(root / "ds"))
    # WHEN /api/meta is built THEN the model's decision travels with it (the front end no longer
    # guesses it from the tracks), with the flow kinds the front end draws apart
    assert queries.meta(stacked)["with_stacks"] is True
    assert queries.meta(plain)["with_stacks"] is False
    assert queries.meta(plain)["flow_kinds"] == {"launch": "runtime_device", "op_to_call": "framework_runtime"}

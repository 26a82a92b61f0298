"""Area selections: aggregation by name, kind and rank, and the flamegraph, checked against hand counts
and against `summary`'s top ops."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinetoscope.analysis import needed_columns
from kinetoscope.analysis.ops.host import top_ops
from kinetoscope.analysis.settings.options import TopOptions
from kinetoscope.cli import main
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying import area

from ...ingest.helpers import kernel, write_session, x

US = 1000


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> ViewerIndex:
    # A step (0-100 µs) holding a Python frame (1-91) that calls aten::linear (2-62) -> aten::addmm (5-45)
    # -> cudaLaunchKernel (10-15), then aten::relu (70-80); the launched gemm runs 20-50 µs on stream 7.
    root = tmp_path_factory.mktemp("area")
    events = [
        x("ProfilerStep#1", 0, 100, cat="user_annotation"),
        x("train.py(10): step", 1, 90, cat="python_function"),
        x("aten::linear", 2, 60),
        x("aten::addmm", 5, 40),
        x("cudaLaunchKernel", 10, 5, cat="cuda_runtime", correlation=1),
        kernel("gemm", 20, 30, correlation=1),
        x("aten::relu", 70, 10),
    ]
    write_session(root / "profile", events)
    assert main(["ingest", str(root / "profile"), "--out", str(root / "ds")]) == 0
    return ViewerIndex.open(Dataset(root / "ds"))


def _tracks(index: ViewerIndex, *layers: str) -> list[int]:
    return [int(r[0]) for r in index.cursor().execute(
        "SELECT track_id FROM view_tracks WHERE list_contains(?, layer) ORDER BY track_id", [list(layers)]).fetchall()]


def _by_name(summary: dict) -> dict[str, tuple[int, int, int, int, int]]:
    return {r["name"]: (r["count"], r["self_ns"], r["total_ns"], r["mean_ns"], r["max_ns"])
            for r in summary["aggregate"]["rows"]}


def test_whole_trace_gives_key_averages_self_times(tiny: ViewerIndex) -> None:
    got = _by_name(area.area_summary(tiny, 0, 100 * US, _tracks(tiny, "framework", "runtime", "device"), "all"))
    # self: step 100 - (60 + 10) (the Python frame between is skipped), frame 90 - its children 60 + 10,
    # linear 60 - 40, addmm 40 - 5 (its runtime call, on another track), the rest their own time
    assert got == {
        "ProfilerStep#1": (1, 30 * US, 100 * US, 100 * US, 100 * US),
        "train.py(10): step": (1, 20 * US, 90 * US, 90 * US, 90 * US),
        "aten::linear": (1, 20 * US, 60 * US, 60 * US, 60 * US),
        "aten::addmm": (1, 35 * US, 40 * US, 40 * US, 40 * US),
        "gemm": (1, 30 * US, 30 * US, 30 * US, 30 * US),
        "aten::relu": (1, 10 * US, 10 * US, 10 * US, 10 * US),
        "cudaLaunchKernel": (1, 5 * US, 5 * US, 5 * US, 5 * US),
    }


def test_times_are_clipped_to_the_area_and_counted_on_chosen_tracks_only(tiny: ViewerIndex) -> None:
    # WHEN the area is 30-75 µs over the framework track alone
    summary = area.area_summary(tiny, 30 * US, 75 * US, _tracks(tiny, "framework"), "all")
    # THEN every time is the part inside it: linear 30-62, addmm 30-45, relu 70-75; the launch (10-15) and the
    # gemm (another track) are not counted
    got = _by_name(summary)
    assert got == {
        "ProfilerStep#1": (1, 8 * US, 45 * US, 45 * US, 45 * US),
        "train.py(10): step": (1, 8 * US, 45 * US, 45 * US, 45 * US),
        "aten::linear": (1, 17 * US, 32 * US, 32 * US, 32 * US),
        "aten::addmm": (1, 15 * US, 15 * US, 15 * US, 15 * US),
        "aten::relu": (1, 5 * US, 5 * US, 5 * US, 5 * US),
    }
    assert {r["kind"] for r in summary["aggregate"]["rows"]} == {"user_annotation", "python", "op"}
    # AND the flamegraph merges them by path, each node's width its time inside the area
    nodes = summary["flame"]["nodes"]
    path = {}
    for i, name in enumerate(nodes["name"]):
        path[i] = (path[nodes["parent"][i]] + "/" if i else "") + name
    flame = {path[i]: (nodes["total_ns"][i], nodes["self_ns"][i]) for i in range(len(nodes["name"]))}
    step = "(selection)/ProfilerStep#1/train.py(10): step"
    assert flame == {
        "(selection)": (45 * US, 0), "(selection)/ProfilerStep#1": (45 * US, 0), step: (45 * US, 8 * US),
        f"{step}/aten::linear": (32 * US, 17 * US), f"{step}/aten::linear/aten::addmm": (15 * US, 15 * US),
        f"{step}/aten::relu": (5 * US, 5 * US),
    }


def test_views_keep_ops_or_device_work(tiny: ViewerIndex) -> None:
    everything = _tracks(tiny, "framework", "runtime", "device")
    ops = area.area_summary(tiny, 0, 100 * US, everything, "ops")["aggregate"]["rows"]
    assert [r["name"] for r in ops] == ["aten::linear", "aten::addmm", "aten::relu"]
    kernels = area.area_summary(tiny, 0, 100 * US, everything, "kernels")["aggregate"]["rows"]
    assert [(r["name"], r["kind"], r["rank"]) for r in kernels] == [("gemm", "kernel", 0)]
    with pytest.raises(area.AreaError, match="unknown view 'gpu'"):
        area.area_summary(tiny, 0, 100 * US, everything, "gpu")
    with pytest.raises(area.AreaError, match="must be after its start"):
        area.area_summary(tiny, 5, 5, everything, "all")


def test_runtime_calls_hang_under_their_op_in_the_flamegraph(tiny: ViewerIndex) -> None:
    nodes = area.area_summary(tiny, 0, 100 * US, _tracks(tiny, "framework", "runtime"), "all")["flame"]["nodes"]
    launch = nodes["name"].index("cudaLaunchKernel")
    assert nodes["name"][nodes["parent"][launch]] == "aten::addmm"
    assert nodes["total_ns"][0] == 100 * US  # the root: the top-level rows' time


def test_whole_trace_totals_equal_summary_top_ops(multirank_dir: Path, multirank: ViewerIndex) -> None:
    # GIVEN the generated four-rank training trace and summary's top ops per rank
    with Dataset(multirank_dir) as dataset:
        expected = top_ops(dataset.load(needed_columns()), TopOptions(top=1000))
    tracks = [int(r[0]) for r in multirank.cursor().execute("SELECT track_id FROM view_tracks").fetchall()]
    rows = area.area_summary(multirank, 0, multirank.span_ns + 1, tracks, "ops")["aggregate"]["rows"]
    got = {(r["rank"], r["name"]): (r["count"], r["self_ns"], r["total_ns"]) for r in rows}
    # THEN a top-level op (never inside an op of its name) has summary's calls, self and total
    top_level = ["aten::addmm", "aten::relu"]
    compared = [row for row in expected.to_pylist() if row["name"] in top_level]
    assert len(compared) == 2 * 4  # both ops on each of the four ranks
    for row in compared:
        assert got[(row["rank"], row["name"])] == (row["calls"], row["self_ns"], row["total_ns"])


PUBLIC = Path("/work/shared/datasets/public-traces")
ALEXNET = PUBLIC / "hta/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"


@pytest.mark.skipif(not ALEXNET.exists(), reason="the public trace corpus is not on this machine")
def test_a_public_trace_over_its_whole_span_matches_summary(tmp_path: Path) -> None:
    # GIVEN a real AlexNet training trace (HTA's test data), copied, imported and ingested as a user would
    trace = tmp_path / ALEXNET.name
    trace.write_bytes(ALEXNET.read_bytes())
    assert main(["import", str(trace), "--out", str(tmp_path / "prof")]) == 0
    assert main(["ingest", str(tmp_path / "prof"), "--out", str(tmp_path / "ds")]) == 0
    index = ViewerIndex.open(Dataset(tmp_path / "ds"))
    with Dataset(tmp_path / "ds") as dataset:
        expected = {(r["rank"], r["name"]): (r["calls"], r["self_ns"], r["total_ns"])
                    for r in top_ops(dataset.load(needed_columns()), TopOptions(top=100_000)).to_pylist()
                    if not r["annotation"]}  # the area's "ops" view counts ops, not annotations
    tracks = [int(r[0]) for r in index.cursor().execute("SELECT track_id FROM view_tracks").fetchall()]
    rows = area.area_summary(index, 0, index.span_ns + 1, tracks, "ops")["aggregate"]["rows"]
    got = {(r["rank"], r["name"]): (r["count"], r["self_ns"], r["total_ns"]) for r in rows}
    # THEN every op summary does not fold into a same-named parent (same number of calls) has its self and total
    same_calls = [key for key in expected if key in got and got[key][0] == expected[key][0]]
    assert len(same_calls) >= 0.9 * len(expected) > 10
    assert {k: got[k] for k in same_calls} == {k: expected[k] for k in same_calls}


def test_neighbours_step_along_a_track_and_lane(multirank: ViewerIndex) -> None:
    from kinetoscope.viewer.querying.neighbours import neighbour

    # GIVEN the slices of one lane of one track, in time order
    track, lane = multirank.cursor().execute(
        "SELECT track, lane FROM ev GROUP BY track, lane HAVING count(*) > 5 ORDER BY track, lane LIMIT 1").fetchone()
    ids = [int(r[0]) for r in multirank.cursor().execute(
        "SELECT id FROM ev WHERE track = ? AND lane = ? ORDER BY ts, id", [track, lane]).fetchall()]
    # THEN next walks them in order, previous walks back, and both stop at the ends
    walked = [ids[0]]
    while (step := neighbour(multirank, walked[-1], True)) is not None:
        walked.append(step["id"])
    assert walked == ids
    assert neighbour(multirank, ids[3], False)["id"] == ids[2]
    assert neighbour(multirank, ids[0], False) is None


def _pivot(index: ViewerIndex, by: str, tracks: list[int], **kw: str) -> dict[str, tuple[int, int, int, int, int]]:
    found = area.pivot(index, 0, index.span_ns + 1, tracks, by=by, **kw)
    return {r["key"]: (r["count"], r["self_ns"], r["total_ns"], r["mean_ns"], r["max_ns"]) for r in found["rows"]}


def test_a_pivot_groups_the_area_by_kind_category_or_track(tiny: ViewerIndex) -> None:
    everything = _tracks(tiny, "framework", "runtime", "device")
    kinds = _pivot(tiny, "kind", everything)
    # the three ops: self 20 + 35 + 10, total 60 + 10 (addmm runs inside linear: counted once), mean of
    # the three calls (60 + 40 + 10) / 3, the longest 60
    assert kinds["op"] == (3, 65 * US, 70 * US, 110 * US // 3, 60 * US)
    assert kinds["kernel"] == (1, 30 * US, 30 * US, 30 * US, 30 * US)
    categories = _pivot(tiny, "category", everything)
    assert categories["cpu_op"] == kinds["op"] and categories["python_function"][0] == 1
    per_track = _pivot(tiny, "track", everything)
    assert set(per_track) <= {str(t) for t in everything} and sum(v[0] for v in per_track.values()) == 7
    # rank 0's total: the rows inside no other row of it, the step and the gemm
    assert _pivot(tiny, "rank", everything) == {"0": (7, 150 * US, 130 * US, 335 * US // 7, 100 * US)}
    with pytest.raises(area.AreaError, match="cannot group by 'colour'"):
        area.pivot(tiny, 0, 100 * US, everything, by="colour")
    with pytest.raises(area.AreaError, match="name the argument"):
        area.pivot(tiny, 0, 100 * US, everything, by="arg")


def test_a_pivot_groups_by_an_argument_value(multirank: ViewerIndex) -> None:
    # GIVEN the generated trace, whose aten::linear and aten::addmm ops carry "Input Dims"
    tracks = [int(r[0]) for r in multirank.cursor().execute("SELECT track_id FROM view_tracks").fetchall()]
    dims = _pivot(multirank, "arg", tracks, arg="Input Dims", view="ops")
    with_dims = multirank.cursor().execute(
        "SELECT count(*) FROM events WHERE json_exists(args, '$.\"Input Dims\"')").fetchone()
    # THEN each value is a group, events without the argument one more (""), and every event counted once
    assert with_dims is not None and sum(v[0] for k, v in dims.items() if k) == with_dims[0] > 0
    assert any("[4096,4096]" in k for k in dims) and "" in dims


def test_a_recursive_frame_counts_its_outermost_time_once_in_the_total(tmp_path: Path) -> None:
    # GIVEN a Python frame calling itself three deep (0-90, 10-80, 20-70 µs) around one op (30-40)
    frame = "threading.py(1010): run"
    events = [x(frame, 0, 90, cat="python_function"), x(frame, 10, 70, cat="python_function"),
              x(frame, 20, 50, cat="python_function"), x("aten::mm", 30, 10)]
    write_session(tmp_path / "profile", events)
    assert main(["ingest", str(tmp_path / "profile"), "--out", str(tmp_path / "ds")]) == 0
    index = ViewerIndex.open(Dataset(tmp_path / "ds"))
    # WHEN the area is 5-85 µs over the thread
    got = _by_name(area.area_summary(index, 5 * US, 85 * US, _tracks(index, "framework"), "all"))
    # THEN the frame's total is the time it covers (5-85: 80 µs), not its three calls summed (80 + 70 + 50);
    # count, mean and max are per call, self is what no child covers (10 + 20 + 40)
    assert got[frame] == (3, 70 * US, 80 * US, 200 * US // 3, 80 * US)
    assert got["aten::mm"] == (1, 10 * US, 10 * US, 10 * US, 10 * US)
    # AND the pivot by name says the same
    pivot = _pivot(index, "name", _tracks(index, "framework"))
    assert pivot[frame][:3] == (3, 80 * US, 90 * US)  # the whole trace: 0-90 µs, self 20 + 20 + 40

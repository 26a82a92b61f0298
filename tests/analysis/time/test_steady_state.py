"""The steady-state window: warm-up left out, serving phases, on built tables, a real capture and public traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kinetoscope.analysis import ANALYSES_BY_NAME, needed_columns
from kinetoscope.analysis.time import steady_state
from kinetoscope.cli import main
from kinetoscope.report.opening import open_dataset

from ..builder import PUBLIC, Events, capture_first_step_builds, public_tables

MS = 1_000_000


@pytest.fixture(scope="module")
def first_step_builds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return capture_first_step_builds(tmp_path_factory.mktemp("steady"))


def _steps(durations_ms: list[int], name: str = "ProfilerStep#{}", kind: str = "user_annotation") -> Events:
    """Back-to-back iterations of the given durations, numbered from 1, each with an op inside."""
    trace, at = Events(), 0
    for number, dur in enumerate(durations_ms, start=1):
        trace.op(name.format(number), at, dur * MS, kind=kind, category="user_annotation")
        trace.op("aten::mm", at + 1, dur * MS - 2, depth=1)
        at += dur * MS
    return trace


def _rows(trace: Events) -> list[dict]:
    return ANALYSES_BY_NAME["steady_state"](trace.tables()).to_pylist()


def test_leading_warm_up_steps_are_left_out() -> None:
    # GIVEN six steps, the first five times the others
    (row,) = _rows(_steps([50, 10, 11, 10, 12, 10]))
    assert (row["phase"], row["source"], row["steps"], row["first_step"], row["last_step"]) == (
        "steady",
        "ProfilerStep",
        5,
        2,
        6,
    )
    assert (row["start_ts_ns"], row["end_ts_ns"], row["warmup_steps"], row["median_step_ns"]) == (
        50 * MS,
        103 * MS,
        1,
        10 * MS,
    )
    assert row["example_id"] == 8  # step 5, the longest kept (two rows per step)
    assert "warm-up 1 dropped (4.8x the median 10.500 ms)" in row["reason"]


def test_a_slow_step_after_the_warm_up_stays_in() -> None:
    (row,) = _rows(_steps([10, 10, 40, 10, 10]))
    assert (row["steps"], row["warmup_steps"], row["start_ts_ns"]) == (5, 0, 0)


def test_prefill_and_decode_by_annotation_name() -> None:
    trace, at = Events(), 0
    for name, dur in [("prefill", 30), *[("decode", 3)] * 3, ("prefill", 30), *[("decode", 3)] * 3, ("prefill", 31)]:
        trace.op(name, at, dur * MS, kind="user_annotation", category="user_annotation")
        at += dur * MS
    by_phase = {r["phase"]: r for r in _rows(trace)}
    assert set(by_phase) == {"prefill", "decode"}
    assert (by_phase["prefill"]["steps"], by_phase["prefill"]["median_step_ns"]) == (3, 30 * MS)
    assert (by_phase["decode"]["steps"], by_phase["decode"]["start_ts_ns"]) == (6, 30 * MS)
    assert by_phase["prefill"]["source"] == "decode, prefill" and "by annotation name" in by_phase["decode"]["reason"]


def test_two_clusters_of_step_time_are_two_phases_but_leading_slow_steps_are_warm_up() -> None:
    by_phase = {r["phase"]: r for r in _rows(_steps([100, 10, 10, 100, 10, 10, 100, 10]))}
    assert (by_phase["long"]["steps"], by_phase["short"]["steps"]) == (3, 5)
    assert "10.0x apart" in by_phase["long"]["reason"]
    (row,) = _rows(_steps([100, 100, 100, 10, 10, 10, 10]))  # slow first: warm-up, not a phase
    assert (row["phase"], row["steps"], row["warmup_steps"]) == ("steady", 4, 3)


def test_without_steps_the_outermost_repeated_annotation_then_optimizer_steps() -> None:
    (row,) = _rows(_steps([20, 5, 5, 5], name="forward"))
    assert (row["source"], row["steps"], row["warmup_steps"], row["first_step"]) == ("forward", 3, 1, 1)
    trace = _steps([9, 5, 5, 5, 5], name="Optimizer.step#SGD.step")
    (row,) = _rows(trace)  # four iterations between five optimizer steps
    assert (row["source"], row["steps"], row["warmup_steps"]) == ("Optimizer.step#SGD.step to the next", 3, 1)
    assert (row["start_ts_ns"], row["end_ts_ns"]) == (9 * MS, 24 * MS)


def test_no_iterations_no_rows() -> None:
    trace = Events()
    trace.op("aten::add", 0, 10)
    trace.op("once", 0, 100, kind="user_annotation", category="user_annotation")
    assert _rows(trace) == [] and steady_state.windows(trace.tables()) == {}


def test_a_real_capture_whose_first_step_builds_the_model(first_step_builds: Path) -> None:
    with open_dataset(first_step_builds) as ds:
        tables = ds.load(needed_columns((ANALYSES_BY_NAME["steady_state"],)))
        steps = ds.sql("SELECT name, ts_ns FROM events WHERE name LIKE 'ProfilerStep#%' ORDER BY ts_ns").to_pylist()
    (row,) = ANALYSES_BY_NAME["steady_state"](tables).to_pylist()
    assert row["source"] == "ProfilerStep" and row["warmup_steps"] >= 1
    first_kept = steps[row["warmup_steps"]]
    assert steps[0]["name"] == "ProfilerStep#0" and row["start_ts_ns"] == first_kept["ts_ns"]
    assert row["last_step"] == int(steps[-1]["name"].split("#")[1])


def test_summary_steady_state_leaves_the_warm_up_out(
    first_step_builds: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def top_ops(*extra: str) -> dict:
        assert (
            main(
                ["summary", str(first_step_builds), "--json", "--top", "1000", "--only", "top_ops,steady_state", *extra]
            )
            == 0
        )
        return json.loads(capsys.readouterr().out)["analyses"]

    every, steady = top_ops(), top_ops("--steady-state")
    names = [{r["name"] for r in doc["top_ops"]["rows"]} for doc in (every, steady)]
    # the model's initialisation ran in step 0 only: counted over the whole trace, not in the window
    assert "aten::uniform_" in names[0] and "aten::uniform_" not in names[1]
    assert "aten::addmm" in names[1]
    calls = [{r["name"]: r["calls"] for r in doc["top_ops"]["rows"]} for doc in (every, steady)]
    (window,) = steady["steady_state"]["rows"]
    assert calls[0]["aten::addmm"] - calls[1]["aten::addmm"] == window["warmup_steps"]  # one per step left out
    assert steady["steady_state"]["rows"] == every["steady_state"]["rows"]  # the window found on the whole trace
    assert top_ops("--steady-state", "--by-rank", "--workers", "1") == steady  # and so rank by rank


@pytest.mark.skipif(not PUBLIC.is_dir(), reason="public trace corpus not present")
def test_public_traces(tmp_path: Path) -> None:
    # The TensorBoard ResNet50 sample: steps 5-10 within 10 % of each other, none dropped
    trace = "kineto/tb_plugin/samples/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz"
    (row,) = ANALYSES_BY_NAME["steady_state"](public_tables(tmp_path / "a", trace, "steady_state")).to_pylist()
    assert (row["steps"], row["first_step"], row["last_step"], row["warmup_steps"]) == (6, 5, 10, 0)
    assert row["median_step_ns"] == 176_273_000
    # MTIA serving: 38 requests (Stage::PyTorchMRSGIFTask::run) overlapping on several threads
    trace = "hta/tests/data/mtia_inference_trace/mtia_inference_rank_0.json.gz"
    (row,) = ANALYSES_BY_NAME["steady_state"](public_tables(tmp_path / "b", trace, "steady_state")).to_pylist()
    assert (row["source"], row["steps"]) == ("Stage::PyTorchMRSGIFTask::run", 38)
    # CPU only (gloo), one step recorded: a window of that step
    trace = "hta/tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
    (row,) = ANALYSES_BY_NAME["steady_state"](public_tables(tmp_path / "c", trace, "steady_state")).to_pylist()
    assert (row["steps"], row["first_step"], row["warmup_steps"]) == (1, 551, 0)

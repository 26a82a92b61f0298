"""Launch delays, queue lengths and short kernels on hand-built tables (exact ns) and on public traces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kinetoscope.analysis import ANALYSES_BY_NAME, IdleOptions
from kinetoscope.cli import main
from kinetoscope.report.opening import open_dataset

from ..builder import PUBLIC, Events, public_tables

ALEXNET = "hta/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
CPU_ONLY = "hta/tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"


def three_queued() -> tuple[Events, dict[str, int]]:
    """Stream 7: calls at 0, 2, 4 launch kA [10,20), kB [20,30), kC [30,100); kD [200,201) has no
    call in the trace; stream 8: a call at 50 launches kE [60,70)."""
    trace = Events()
    ids = {"kA": trace.launched("kA", 0, 10, 10), "kB": trace.launched("kB", 2, 20, 10)}
    ids["kC"] = trace.launched("kC", 4, 30, 70)
    ids["kD"] = trace.work("kD", 200, 1)
    ids["kE"] = trace.launched("kE", 50, 60, 10, stream=8)
    return trace, ids


def test_launch_delays_and_short_kernels() -> None:
    trace, ids = three_queued()
    row = ANALYSES_BY_NAME["kernel_launches"](trace.tables(), IdleOptions(short_kernel_ns=11)).to_pylist()[0]
    # delays 10, 18, 26 and 10 (kE); kD has no call
    assert (row["ops"], row["launched"]) == (5, 4)
    assert (row["delay_p50_ns"], row["delay_p90_ns"], row["delay_p99_ns"], row["delay_max_ns"]) == (10, 26, 26, 26)
    assert row["example_id"] == ids["kC"]
    # kA, kB, kD and kE are under 11 ns: 31 of the 101 ns of device time
    assert (row["short_ops"], row["short_ns"], row["short_pct_of_device_time"]) == (4, 31, 30.69)


def test_queue_lengths_launched_not_finished_and_not_started() -> None:
    trace, ids = three_queued()
    by_stream = {r["stream"]: r for r in ANALYSES_BY_NAME["queue_lengths"](trace.tables()).to_pylist()}
    s7 = by_stream[7]
    # not finished: 1 over [0,2), 2 over [2,4), 3 over [4,20), 2 over [20,30), 1 over [30,100)
    assert (s7["ops"], s7["max_queued"], s7["mean_queued"]) == (3, 3, 1.44)
    # not started: 1, 2, 3 over [4,10), 2 over [10,20), 1 over [20,30): 54 / 30
    assert (s7["max_waiting"], s7["mean_waiting"]) == (3, 1.8)
    assert s7["example_id"] == ids["kC"]  # its launch filled the queue
    assert (by_stream[8]["max_queued"], by_stream[8]["mean_queued"]) == (1, 1.0)


def test_no_device_work_gives_empty_tables() -> None:
    trace = Events()
    trace.op("aten::add", 0, 10)
    for name in ("kernel_launches", "queue_lengths"):
        assert ANALYSES_BY_NAME[name](trace.tables()).num_rows == 0


@pytest.mark.skipif(not PUBLIC.is_dir(), reason="public trace corpus not present")
def test_alexnet_launches(tmp_path: Path) -> None:
    tables = public_tables(tmp_path, ALEXNET, "kernel_launches", "queue_lengths")
    row = ANALYSES_BY_NAME["kernel_launches"](tables).to_pylist()[0]
    # 98 ops, all launched inside the trace; the longest delay is the first iteration's kernel
    # queued at 7.88 s that started at 10.94 s (idle_time's largest "other")
    assert (row["ops"], row["launched"]) == (98, 98)
    assert row["delay_max_ns"] == 3_055_564_000
    assert row["delay_p50_ns"] <= row["delay_p90_ns"] <= row["delay_p99_ns"] <= row["delay_max_ns"]
    # HTA 0.5 get_queue_length_summary: max 18 on stream 7, 2 on stream 20 (benchmarks/idle_vs_hta.py)
    by_stream = {r["stream"]: r for r in ANALYSES_BY_NAME["queue_lengths"](tables).to_pylist()}
    assert (by_stream[7]["max_waiting"], by_stream[20]["max_waiting"]) == (18, 2)
    assert by_stream[7]["max_queued"] >= by_stream[7]["max_waiting"]


@pytest.mark.skipif(not PUBLIC.is_dir(), reason="public trace corpus not present")
def test_summary_short_kernel_us(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    public_tables(tmp_path, ALEXNET, "kernel_launches")
    capsys.readouterr()

    def short_ops(*extra: str) -> int:
        assert main(["summary", str(tmp_path / "ds"), "--json", "--only", "kernel_launches", *extra]) == 0
        return int(json.loads(capsys.readouterr().out)["analyses"]["kernel_launches"]["rows"][0]["short_ops"])

    with open_dataset(tmp_path / "ds") as ds:
        under = ds.sql(
            "SELECT count(*) AS n FROM events WHERE kind IN ('kernel', 'memcpy', 'memset') AND dur_ns < 2500"
        )
    assert short_ops() == 25 and short_ops("--short-kernel-us", "2.5") == under.column("n")[0].as_py() < 25
    assert main(["summary", str(tmp_path / "ds"), "--short-kernel-us", "-1"]) != 0


@pytest.mark.skipif(not PUBLIC.is_dir(), reason="public trace corpus not present")
def test_cpu_only_trace_gives_empty_tables(tmp_path: Path) -> None:
    tables = public_tables(tmp_path, CPU_ONLY, "kernel_launches", "queue_lengths")
    for name in ("kernel_launches", "queue_lengths"):
        assert ANALYSES_BY_NAME[name](tables).num_rows == 0


def graph_replay(nodes: int) -> tuple[Events, int]:
    """One cudaGraphLaunch at 0 (µs) replaying ``nodes`` kernels of 10 µs back to back from 40 µs,
    each carrying the graph launch's correlation, as Kineto links a replay's nodes to it."""
    trace = Events()
    call = trace.call("cudaGraphLaunch", 0, 5_000)
    for n in range(nodes):
        trace.work(f"node{n}", 40_000 + n * 10_000, 10_000, launch=call)
    return trace, call


def test_a_graph_replay_is_one_launch_not_one_per_node() -> None:
    # GIVEN one graph launch replaying 2,200 kernels (a decode step under CUDA graphs)
    trace, _ = graph_replay(2_200)
    row = ANALYSES_BY_NAME["kernel_launches"](trace.tables(), IdleOptions()).to_pylist()[0]
    # THEN only its first node is a launch: one delay, 40 µs (not a p50 of 11 ms measured from the
    # one graph launch to the middle node)
    assert (row["ops"], row["launched"]) == (2_200, 1)
    assert row["delay_p50_ns"] == row["delay_max_ns"] == 40_000

"""Idle time between device work, split by cause, on hand-built tables (exact ns) and on public traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinetoscope.analysis import ANALYSES_BY_NAME, IdleOptions, needed_columns
from kinetoscope.report.opening import open_dataset

from ..builder import HOST, PUBLIC, Events, capture_first_step_builds, public_tables

US = 1_000
CAP = IdleOptions(launch_latency_max_ns=100 * US)
EVENT_SYNC = "hta/tests/data/critical_path/cuda_event_sync/event_sync_trace.json.gz"
ALEXNET = "hta/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"
DLRM_RANK0 = "param/et_replay/tests/inputs/dlrm_kineto/worker0_step_12.1694128201545.pt.trace.json"
CPU_ONLY = "hta/tests/data/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz"
DEVICE_GAPS = ("idle_time", "idle_gaps", "kernel_launches", "queue_lengths")
needs_corpus = pytest.mark.skipif(not PUBLIC.is_dir(), reason="public trace corpus not present")


@pytest.fixture(scope="module")
def first_step_builds(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return capture_first_step_builds(tmp_path_factory.mktemp("steady"))


def two_streams() -> tuple[Events, dict[str, int]]:
    """Stream 7: k1 [10,20), k2 [60,80) launched at 50, k3 [400,450) launched at 190 while the host
    sat in cudaStreamSynchronize [85,200); stream 8: k4 [100,300) with no launch call (µs)."""
    trace = Events()
    ids = {"k1": trace.launched("k1", 0, 10 * US, 10 * US)}
    ids["k2"] = trace.launched("k2", 50 * US, 60 * US, 20 * US)
    trace.call("cudaStreamSynchronize", 85 * US, 115 * US)
    ids["k3"] = trace.launched("k3", 190 * US, 400 * US, 50 * US)
    ids["k4"] = trace.work("k4", 100 * US, 200 * US, stream=8)
    trace.op("aten::mm", 0, 5 * US)  # host rows are not device work
    return trace, ids


def _rows(name: str, tables: dict, options: IdleOptions = CAP) -> list[dict]:
    return ANALYSES_BY_NAME[name](tables, options).to_pylist()


def test_each_gap_is_split_at_the_launch_call_and_where_the_host_waited_for_the_device() -> None:
    trace, ids = two_streams()
    by_stream = {r["stream"]: r for r in _rows("idle_time", trace.tables())}
    # THEN stream 7: gap [20,60) is 30 host wait then 10 queued; gap [80,400) is 5 host wait (80-85),
    # 115 sync, then, once k3's call started at 190 and the sync ended at 200, 200 queued: 100 latency
    # (the cap) and 100 other
    s7 = by_stream[7]
    assert (s7["span_ns"], s7["busy_ns"], s7["idle_ns"], s7["gaps"]) == (440 * US, 80 * US, 360 * US, 2)
    parts = (s7["host_wait_ns"], s7["launch_latency_ns"], s7["sync_ns"], s7["other_ns"])
    assert parts == (35 * US, 110 * US, 115 * US, 100 * US)
    assert s7["example_id"] == ids["k3"]  # it ends the longest gap
    assert by_stream[8]["idle_ns"] == 0 and by_stream[8]["gaps"] == 0
    # THEN the device (streams merged): [20,60) as above; [80,100) ends with k4, which has no
    # launch call: 15 sync, 5 other; [300,400) ends with k3, queued since 190: 100 latency
    device = by_stream[-1]
    assert (device["span_ns"], device["busy_ns"], device["idle_ns"]) == (440 * US, 280 * US, 160 * US)
    parts = (device["host_wait_ns"], device["launch_latency_ns"], device["sync_ns"], device["other_ns"])
    assert parts == (30 * US, 110 * US, 15 * US, 5 * US)
    assert device["host_wait_pct"] == 18.75 and device["idle_pct"] == round(100 * 160 / 440, 2)


def test_the_latency_cap_moves_long_queued_waits_to_other() -> None:
    trace, _ = two_streams()
    s7 = next(r for r in _rows("idle_time", trace.tables(), IdleOptions(launch_latency_max_ns=0)) if r["stream"] == 7)
    assert (s7["launch_latency_ns"], s7["other_ns"]) == (0, 210 * US)
    with pytest.raises(ValueError, match="0 or more"):
        IdleOptions(launch_latency_max_ns=-1)


def test_a_copy_into_pageable_memory_blocks_the_call_that_queued_it() -> None:
    # GIVEN k1 [0,10), then cudaMemcpyAsync [20,60) whose DtoH copy to pageable memory runs [50,55)
    trace = Events()
    trace.launched("k1", 0, 0, 10 * US)
    call = trace.call("cudaMemcpyAsync", 20 * US, 40 * US)
    trace.work("Memcpy DtoH (Device -> Pageable)", 50 * US, 5 * US, launch=call, kind="memcpy")
    row = next(r for r in _rows("idle_time", trace.tables()) if r["stream"] == -1)
    # THEN of the gap [10,50): 10 host wait before the call, 30 inside the blocking call
    assert (row["host_wait_ns"], row["launch_latency_ns"], row["sync_ns"], row["other_ns"]) == (10 * US, 0, 30 * US, 0)


def test_a_sync_recorded_for_a_query_does_not_block() -> None:
    # GIVEN a gap [10,100) in which the host calls cudaEventQuery [20,22), with its Event Sync
    # recorded by CUPTI, then cudaEventSynchronize [30,50) with its own
    trace = Events()
    trace.launched("k1", 0, 0, 10 * US)
    for name, ts, dur in (("cudaEventQuery", 20, 2), ("cudaEventSynchronize", 30, 20)):
        call = trace.call(name, ts * US, dur * US)
        trace.add(
            "Event Sync",
            ts * US,
            dur * US,
            **{**HOST, "kind": "sync", "category": "cuda_sync", "device": 0},
            launch_id=call,
        )
    trace.launched("k2", 90 * US, 100 * US, 10 * US)
    row = next(r for r in _rows("idle_time", trace.tables()) if r["stream"] == -1)
    assert (row["host_wait_ns"], row["sync_ns"], row["launch_latency_ns"]) == (60 * US, 20 * US, 10 * US)


def test_gaps_by_size() -> None:
    trace, ids = two_streams()
    by_size = {r["size"]: r for r in _rows("idle_gaps", trace.tables())}
    assert list(by_size) == ["<10us", "10-100us", "100us-1ms", ">=1ms"]
    assert (by_size["10-100us"]["gaps"], by_size["10-100us"]["total_ns"]) == (2, 60 * US)
    assert (by_size["100us-1ms"]["gaps"], by_size["100us-1ms"]["total_ns"]) == (1, 100 * US)
    assert by_size["100us-1ms"]["main_cause"] == "launch_latency"
    assert by_size["100us-1ms"]["example_id"] == ids["k3"] and by_size["<10us"]["example_id"] == -1
    assert by_size["10-100us"]["pct_of_idle"] == 37.5


def test_without_a_stream_column_only_the_device_row() -> None:
    trace, _ = two_streams()
    tables = {"events": trace.tables()["events"].drop_columns(["stream"])}
    (row,) = _rows("idle_time", tables)
    assert (row["stream"], row["idle_ns"]) == (-1, 160 * US)


def test_no_device_work_gives_empty_tables() -> None:
    trace = Events()
    trace.op("aten::add", 0, 10)
    for name in ("idle_time", "idle_gaps"):
        assert ANALYSES_BY_NAME[name](trace.tables()).num_rows == 0


def test_a_real_cpu_capture_has_no_device_gaps(first_step_builds: Path) -> None:
    with open_dataset(first_step_builds) as ds:
        tables = ds.load(needed_columns(tuple(ANALYSES_BY_NAME[n] for n in DEVICE_GAPS)))
    assert tables["events"].num_rows > 0
    assert {name: ANALYSES_BY_NAME[name](tables).num_rows for name in DEVICE_GAPS} == dict.fromkeys(DEVICE_GAPS, 0)


@needs_corpus
def test_event_sync_trace_by_hand(tmp_path: Path) -> None:
    # HTA's event-sync example, stream 7: five ops; the gaps were counted by hand from the trace: the
    # launches start 36, 16, 16 and 90 µs into their gaps, cudaMemcpyAsync to pageable memory,
    # cudaStreamSynchronize and cudaEventSynchronize hold the host 33 µs of the gaps
    row = next(r for r in _rows("idle_time", public_tables(tmp_path, EVENT_SYNC, "idle_time")) if r["stream"] == 7)
    assert (row["ops"], row["gaps"], row["idle_ns"]) == (5, 4, 212 * US)
    assert (row["host_wait_ns"], row["launch_latency_ns"], row["sync_ns"], row["other_ns"]) == (
        143 * US,
        36 * US,
        33 * US,
        0,
    )


@needs_corpus
def test_alexnet_idle_time_equals_htas(tmp_path: Path) -> None:
    # HTA 0.5 get_idle_time_breakdown (benchmarks/idle_vs_hta.py): stream 7 idles 12,855,111 µs,
    # stream 20 12,011,721 µs; the largest gap is the first iteration's 10.9 s
    tables = public_tables(tmp_path, ALEXNET, "idle_time", "temporal_breakdown")
    by_stream = {r["stream"]: r for r in _rows("idle_time", tables, IdleOptions())}
    assert (by_stream[7]["idle_ns"], by_stream[20]["idle_ns"]) == (12_855_111_000, 12_011_721_000)
    temporal = ANALYSES_BY_NAME["temporal_breakdown"](tables).to_pylist()[0]
    assert by_stream[-1]["idle_ns"] == temporal["idle_ns"] and by_stream[-1]["span_ns"] == temporal["span_ns"]
    for row in by_stream.values():
        parts = sum(row[f"{name}_ns"] for name in ("host_wait", "launch_latency", "sync", "other"))
        assert parts == row["idle_ns"]
    # the first kernel of the second iteration was queued at 7.88 s and started at 10.94 s
    assert by_stream[7]["other_ns"] > 3_000_000_000 and by_stream[7]["host_wait_pct"] > 75


@needs_corpus
def test_dlrm_rank0_idle_time_per_stream_equals_htas(tmp_path: Path) -> None:
    # HTA 0.5 get_idle_time_breakdown on the same file, per stream (µs): host wait + kernel wait
    hta_idle_us = {7: 11_571, 22: 145, 24: 5_924, 84: 4_743}
    tables = public_tables(tmp_path, DLRM_RANK0, "idle_time")
    by_stream = {r["stream"]: r for r in _rows("idle_time", tables, IdleOptions())}
    assert {s: round(by_stream[s]["idle_ns"] / US) for s in hta_idle_us} == hta_idle_us
    # the NCCL streams (22, 24, 84) wait on the host or on a synchronisation, never queued for long
    assert all(by_stream[s]["other_ns"] == 0 for s in (22, 24, 84))
    assert by_stream[24]["sync_ns"] > 0 and by_stream[-1]["idle_ns"] < by_stream[7]["idle_ns"]


@needs_corpus
def test_cpu_only_trace_gives_empty_tables(tmp_path: Path) -> None:
    tables = public_tables(tmp_path, CPU_ONLY, "idle_time", "idle_gaps")
    assert tables["events"].num_rows > 0
    for name in ("idle_time", "idle_gaps"):
        assert ANALYSES_BY_NAME[name](tables).num_rows == 0


def test_waiting_for_a_graph_replay_is_not_sync() -> None:
    # GIVEN a graph launch at 0 whose two nodes start at 150 and 300 µs (queued behind other work
    # or a clock offset) while the host waits in cudaStreamSynchronize [10, 400)
    trace = Events()
    graph = trace.call("cudaGraphLaunch", 0, 5 * US)
    trace.launched("k0", 0, 0, 1 * US)
    trace.call("cudaStreamSynchronize", 10 * US, 390 * US)
    trace.work("node0", 150 * US, 100 * US, launch=graph)
    trace.work("node1", 300 * US, 50 * US, launch=graph)
    s7 = next(r for r in _rows("idle_time", trace.tables()) if r["stream"] == 7)
    # THEN the device's idle [1,150) and [250,300) is queued work, never sync: the host waited for
    # work it had already queued; 100 latency (the cap) + 49 other, then 50 latency
    assert s7["sync_ns"] == 0
    assert (s7["launch_latency_ns"], s7["other_ns"]) == (150 * US, 49 * US)


LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def test_device_idle_while_the_host_loads_data_is_host_wait() -> None:
    # GIVEN k1 [0,10); k2 launched at 15 but starting at 200 while the host hands out a batch
    # [20,180) with a cudaStreamSynchronize [30,40) inside it; k3 [400,450) with no launch call in
    # the trace while another thread hands out a batch [250,350) (µs)
    trace = Events()
    trace.launched("k1", 0, 0, 10 * US)
    trace.launched("k2", 15 * US, 200 * US, 10 * US)
    trace.op(LOADER, 20 * US, 160 * US, kind="user_annotation", category="user_annotation")
    trace.call("cudaStreamSynchronize", 30 * US, 10 * US)
    trace.work("k3", 400 * US, 50 * US)
    trace.op(LOADER, 250 * US, 100 * US, tid=2)
    s7 = next(r for r in _rows("idle_time", trace.tables()) if r["stream"] == 7)
    # THEN gap [10,200): 5 host wait before k2's launch, 150 loading (host wait: the device waited
    # for the data), 10 sync, 25 latency; gap [210,400): 100 loading, 90 other (no launch call)
    parts = (s7["host_wait_ns"], s7["sync_ns"], s7["launch_latency_ns"], s7["other_ns"])
    assert parts == (255 * US, 10 * US, 25 * US, 90 * US)


def test_gaps_split_a_few_at_a_time_give_the_same_idle_time_and_gaps(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN two streams whose gaps fall on both sides of a launch call and a sync
    from kinetoscope.analysis.device import gaps

    trace, _ = two_streams()
    whole = [_rows(name, trace.tables()) for name in ("idle_time", "idle_gaps")]
    # WHEN each timeline's gaps are split one at a time; THEN every row is the same
    monkeypatch.setattr(gaps, "SPLIT_GAPS", 1)
    assert [_rows(name, trace.tables()) for name in ("idle_time", "idle_gaps")] == whole

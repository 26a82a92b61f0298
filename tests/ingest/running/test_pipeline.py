"""Ingest of session directories into a dataset: contents, reruns, damaged ranks, snapshots."""

from __future__ import annotations

import os
import pickle
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from ..helpers import BASE_NS, HOST_PID, kernel, write_session, x


def _step(rank: int) -> list[dict]:
    return [
        x("ProfilerStep#3", 0, 100, cat="user_annotation", **{"External id": 1}),
        x("aten::mm", 10, 40, **{"External id": 2}),
        x("cudaLaunchKernel", 20, 5, cat="cuda_runtime", correlation=50 + rank, **{"External id": 2}),
        kernel("gemm", 30, 60, correlation=50 + rank),
        kernel("ncclDevKernel_AllReduce_RING_LL(x)", 95, 10, correlation=99, stream=9),
    ]


def _tree(root: Path, ranks: int = 2) -> list[Path]:
    return [write_session(root, _step(r), rank=r, pid=HOST_PID + r, world_size=ranks) for r in range(ranks)]


def test_sessions_become_partitioned_tables(tmp_path: Path) -> None:
    _tree(tmp_path / "prof")
    report = ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds"))
    assert report.status == "ok" and report.exit_code == 0
    assert (tmp_path / "ds" / "events" / "run=prof" / "rank=1").is_dir()
    with open_dataset(tmp_path / "ds") as ds:
        events = ds.table("events").to_pylist()
        assert len(events) == 10
        mm = next(e for e in events if e["name"] == "aten::mm" and e["rank"] == 0)
        assert (mm["ts_ns"], mm["dur_ns"], mm["depth"], mm["step"]) == (BASE_NS + 10_000, 40_000, 1, 3)
        kinds = ds.sql("SELECT kind, count(*) AS n FROM flows GROUP BY kind ORDER BY kind").to_pylist()
        assert kinds == [{"kind": "framework_runtime", "n": 2}, {"kind": "runtime_device", "n": 2}]
        gemm = ds.sql("SELECT step FROM events WHERE name = 'gemm' AND rank = $r", {"r": 1}).to_pylist()
        assert gemm == [{"step": 3}]
        sessions = ds.table("sessions").to_pylist()
        assert sorted((s["rank"], s["state"], s["event_count"]) for s in sessions) == [
            (0, "COMPLETE", 5),
            (1, "COMPLETE", 5),
        ]
        assert ds.table("schema").num_rows > 50
        assert ds.table("allocations").num_rows == 0  # declared, empty, still queryable
        assert ds.sql("SELECT count(*) AS n FROM allocations").to_pylist() == [{"n": 0}]


def test_rerun_skips_unchanged_sessions_and_redoes_changed_ones(tmp_path: Path) -> None:
    sessions = _tree(tmp_path / "prof")
    options = IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")
    ingest(options)
    again = ingest(options)
    assert again.outcomes == [] and len(again.skipped) == 2
    trace = sessions[1] / layout.TRACE_JSON
    trace.write_text(trace.read_text().replace("aten::mm", "aten::bmm"))
    os.utime(trace, ns=(1, 1))
    third = ingest(options)
    assert [o.rank for o in third.outcomes] == [1]
    with open_dataset(tmp_path / "ds") as ds:
        names = ds.sql("SELECT rank, name FROM events WHERE name LIKE 'aten::%' ORDER BY rank").to_pylist()
    assert names == [{"rank": 0, "name": "aten::mm"}, {"rank": 1, "name": "aten::bmm"}]


def test_removed_sessions_leave_the_dataset(tmp_path: Path) -> None:
    sessions = _tree(tmp_path / "prof")
    options = IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")
    ingest(options)
    for path in sessions[1].iterdir():
        path.unlink()
    sessions[1].rmdir()
    report = ingest(options)
    assert len(report.removed) == 1
    with open_dataset(tmp_path / "ds") as ds:
        assert ds.sql("SELECT DISTINCT rank FROM events").to_pylist() == [{"rank": 0}]


def test_a_corrupt_rank_still_lets_the_others_in_and_says_what_was_lost(tmp_path: Path) -> None:
    sessions = _tree(tmp_path / "prof", ranks=3)
    trace = sessions[1] / layout.TRACE_JSON
    trace.write_bytes(trace.read_bytes()[:-400])  # cut short mid-event
    (sessions[2] / layout.TRACE_JSON).write_bytes(b"\x00\x01 not json at all")
    report = ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds"))
    assert report.status == "partial" and report.exit_code == 1
    by_rank = {o.rank: o for o in report.outcomes}
    assert by_rank[0].status == "ok" and by_rank[1].status == "partial"
    with open_dataset(tmp_path / "ds") as ds:
        rows = ds.sql("SELECT rank, count(*) AS n FROM events GROUP BY rank ORDER BY rank").to_pylist()
        counts = {row["rank"]: row["n"] for row in rows}
        assert counts[0] == 5 and 0 < counts[1] < 5
        kinds = {(w["rank"], w["kind"]) for w in ds.table("warnings").to_pylist()}
    assert (1, "truncated") in kinds
    assert any(rank == 2 for rank, _ in kinds)


def test_a_lost_manifest_file_or_metadata_makes_the_session_partial(tmp_path: Path) -> None:
    def lose_host_mem(info: Any) -> None:
        info.files.add(name="host_mem.pb", size_bytes=2062)

    write_session(tmp_path / "prof", _step(0), rank=0, world_size=2, edit=lose_host_mem)
    damaged = write_session(tmp_path / "prof", _step(1), rank=1, pid=HOST_PID + 1, world_size=2)
    (damaged / layout.TRACE_INFO).write_bytes(b"\xff" * 40)
    report = ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds"))
    assert [o.status for o in report.outcomes] == ["partial", "partial"] and report.exit_code == 1
    with open_dataset(tmp_path / "ds") as ds:
        kinds = {(w["file"], w["kind"]) for w in ds.table("warnings").to_pylist()}
    assert {("host_mem.pb", "missing_file"), ("trace_info.pb", "no_metadata")} <= kinds


def test_snapshot_allocations_join_allocator_events_and_frames(tmp_path: Path) -> None:
    events = [
        x("aten::empty", 0, 10),
        {
            "ph": "i",
            "name": "[memory]",
            "pid": HOST_PID,
            "tid": 1,
            "ts": 5,
            "s": "t",
            "args": {"Addr": 4096, "Bytes": 256, "Device Type": 0, "Device Id": -1, "Total Allocated": 256},
        },
    ]
    session = write_session(tmp_path / "prof", events)
    frames = [
        {"filename": "model.py", "line": 7, "name": "forward"},
        {"filename": "train.py", "line": 3, "name": "main"},
    ]
    t_us = (BASE_NS + 5_000) // 1000
    snapshot = {
        "segments": [
            {
                "device": 0,
                "address": 4096,
                "total_size": 1024,
                "blocks": [{"address": 8192, "size": 64, "requested_size": 64, "state": "active_allocated"}],
            }
        ],
        "device_traces": [
            [
                {"action": "alloc", "addr": 4096, "size": 256, "time_us": t_us, "frames": frames},
                {"action": "free_requested", "addr": 4096, "size": 256, "time_us": t_us + 3, "frames": []},
                {"action": "free_completed", "addr": 4096, "size": 256, "time_us": t_us + 4, "frames": []},
            ]
        ],
        "kinetoscope": {"device_kind": "cpu"},
    }
    (session / "memory_snapshot_rank0.pickle").write_bytes(pickle.dumps(snapshot, protocol=4))
    ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds"))
    with open_dataset(tmp_path / "ds") as ds:
        rows = ds.sql(
            "SELECT a.*, e.name AS event FROM allocations a LEFT JOIN events e ON e.id = a.event_id "
            "ORDER BY alloc_ts_ns DESC"
        ).to_pylist()
        stack = ds.sql(
            "SELECT f.name, p.name AS caller FROM frames f JOIN frames p ON p.stack_id = f.parent_id "
            "WHERE f.stack_id = $s",
            {"s": rows[0]["stack_id"]},
        ).to_pylist()
    assert [(r["size_bytes"], r["alloc_ts_ns"], r["free_ts_ns"], r["device"]) for r in rows] == [
        (256, BASE_NS + 5_000, BASE_NS + 9_000, -1),
        (64, -1, -1, -1),
    ]
    assert rows[0]["event"] == "[memory]"
    assert stack == [{"name": "forward", "caller": "main"}]


def test_a_snapshot_that_would_run_code_is_refused_and_reported(tmp_path: Path) -> None:
    session = write_session(tmp_path / "prof", [x("op", 0, 1)])
    marker = tmp_path / "ran"

    class Evil:
        def __reduce__(self) -> tuple:
            return (open, (str(marker), "w"))

    (session / "memory_snapshot_rank0.pickle").write_bytes(pickle.dumps(Evil()))
    report = ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds"))
    assert not marker.exists()
    assert report.status == "partial"
    with open_dataset(tmp_path / "ds") as ds:
        assert "bad_snapshot" in {w["kind"] for w in ds.table("warnings").to_pylist()}


def test_no_sessions_is_an_error_that_points_to_import(tmp_path: Path) -> None:
    from kinetoscope import SessionError

    (tmp_path / "prof").mkdir()
    with pytest.raises(SessionError, match="kinetoscope import"):
        ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds"))


def test_worker_processes_give_the_same_dataset(tmp_path: Path) -> None:
    # GIVEN three ranks WHEN ingested in two worker processes and in this process THEN the rows agree
    _tree(tmp_path / "prof", ranks=3)
    parallel = ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "a", jobs=2))
    serial = ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "b", jobs=1))
    assert parallel.status == serial.status == "ok"
    assert sorted(o.stats.events for o in parallel.outcomes) == sorted(o.stats.events for o in serial.outcomes)
    query = "SELECT rank, name, ts_ns, depth, step FROM events ORDER BY rank, ts_ns, name"
    with open_dataset(tmp_path / "a") as a, open_dataset(tmp_path / "b") as b:
        assert a.sql(query).to_pylist() == b.sql(query).to_pylist()


def _no_rank(info: Any) -> None:
    info.identity.rank_known = False


def test_processes_without_a_rank_are_numbered_not_merged(tmp_path: Path) -> None:
    # GIVEN two processes that recorded no rank (both say rank 0), one with two profiling cycles
    tree = tmp_path / "profile"
    events = [x("ProfilerStep#1", 10, 100), x("aten::mm", 20, 10)]
    write_session(tree, events, pid=11, edit=_no_rank)
    write_session(tree, events, pid=11, cycle=1, edit=_no_rank)
    write_session(tree, events, pid=22, edit=_no_rank)
    # WHEN ingested
    out = tmp_path / "ds"
    ingest(IngestOptions(profile_dir=tree, out=out, jobs=1))
    ds = open_dataset(out)
    # THEN each process is a rank of its own (its cycles share it), and a warning says how they were numbered
    sessions = ds.sql("SELECT rank, pid, slot FROM sessions ORDER BY rank, slot").to_pylist()
    assert [(r["rank"], r["pid"], r["slot"]) for r in sessions] == [(0, 11, 0), (0, 11, 1), (1, 22, 0)]
    query = "SELECT rank, severity, message FROM warnings WHERE kind = 'rank_numbered' ORDER BY rank"
    warned = ds.sql(query).to_pylist()
    assert [(w["rank"], w["severity"]) for w in warned] == [(0, "warning"), (0, "warning"), (1, "warning")]
    assert "numbered rank 1" in warned[2]["message"] and "process 22" in warned[2]["message"]


def test_a_single_process_without_a_rank_stays_rank_0_silently(tmp_path: Path) -> None:
    tree = tmp_path / "profile"
    write_session(tree, [x("aten::mm", 20, 10)], pid=11, edit=_no_rank)
    out = tmp_path / "ds"
    ingest(IngestOptions(profile_dir=tree, out=out, jobs=1))
    ds = open_dataset(out)
    assert ds.sql("SELECT rank FROM sessions").column("rank").to_pylist() == [0]
    assert ds.sql("SELECT * FROM warnings WHERE kind = 'rank_numbered'").num_rows == 0

"""The model's columns as ingest writes them: kind, op_id, self_ns, collectives and how flows were found."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kinetoscope
from kinetoscope.cli import main

from ..ingest.helpers import HOST_PID, kernel, write_session, x


def _ingest(tmp_path: Path, events: list[dict[str, Any]]) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    write_session(tmp_path / "profile", events)
    assert main(["ingest", str(tmp_path / "profile"), "--out", str(tmp_path / "ds")]) == 0
    opened = kinetoscope.open(tmp_path / "ds")
    rows = {r["name"]: r for r in opened.table("events").to_pylist()}
    return rows, opened.table("flows").to_pylist()


def test_self_time_and_nearest_op_ignore_python_frames(tmp_path: Path) -> None:
    # GIVEN a with_stack trace: aten::linear > python frame > aten::mm > cudaLaunchKernel -> kernel
    rows, flows = _ingest(
        tmp_path,
        [
            x("aten::linear", 0, 100, **{"External id": 1}),
            x("nn/modules/linear.py(125): forward", 1, 40, cat="python_function"),
            x("aten::mm", 2, 30, **{"External id": 2}),
            x("cudaLaunchKernel", 3, 5, cat="cuda_runtime", correlation=9, **{"External id": 2}),
            kernel("gemm", 10, 50, correlation=9),
        ],
    )
    # THEN self time is torch's: linear 100 - mm 30 = 70 µs; mm 30 - launch 5 = 25 µs
    assert {n: rows[n]["self_ns"] for n in ("aten::linear", "aten::mm", "cudaLaunchKernel")} == {
        "aten::linear": 70_000,
        "aten::mm": 25_000,
        "cudaLaunchKernel": 5_000,
    }
    # AND the kernel's op is aten::mm (through its launch), the frame's op is aten::linear
    assert rows["gemm"]["op_id"] == rows["aten::mm"]["id"]
    assert rows["nn/modules/linear.py(125): forward"]["op_id"] == rows["aten::linear"]["id"]
    assert [r["kind"] for r in rows.values()] == ["op", "python", "op", "runtime", "kernel"]
    assert {(f["kind"], f["found_by"]) for f in flows} == {
        ("framework_runtime", "external_id"),
        ("runtime_device", "correlation"),
    }


def test_a_kernel_launched_by_a_symmetric_memory_op_is_communication(tmp_path: Path) -> None:
    rows, _ = _ingest(
        tmp_path,
        [
            x("symm_mem::two_shot_all_reduce_", 0, 20, **{"External id": 1}),
            x("cudaLaunchKernel", 1, 5, cat="cuda_runtime", correlation=3, **{"External id": 1}),
            kernel("void two_shot_kernel<float, 8>(float*)", 10, 40, correlation=3),
            x("gpu annotation", 10, 60, cat="gpu_user_annotation", tid=7, pid=0, device=0, stream=7),
        ],
    )
    assert rows["void two_shot_kernel<float, 8>(float*)"]["collective"] == "allreduce"
    assert rows["gpu annotation"]["kind"] == "device_annotation"
    assert rows["gpu annotation"]["pid"] == HOST_PID


def test_runtime_calls_get_their_own_track_and_lanes(tmp_path: Path) -> None:
    # GIVEN a thread named by metadata, ops nested 3 deep with launches inside, and two kernels
    # that overlap on one stream
    events = [
        {"ph": "M", "name": "thread_name", "pid": HOST_PID, "tid": 1, "args": {"name": "trainer"}},
        x("aten::linear", 0, 100),
        x("aten::addmm", 1, 90),
        x("aten::mm", 2, 80),
        x("cudaLaunchKernel", 3, 5, cat="cuda_runtime", correlation=1),
        x("cudaLaunchKernel", 10, 5, cat="cuda_runtime", correlation=2),
        kernel("k1", 20, 30, correlation=1),
        kernel("k2", 30, 30, correlation=2),
    ]
    write_session(tmp_path / "profile", events)
    assert main(["ingest", str(tmp_path / "profile"), "--out", str(tmp_path / "ds")]) == 0
    opened = kinetoscope.open(tmp_path / "ds")
    tracks = {t["track_id"]: t for t in opened.table("tracks").to_pylist()}
    rows = opened.table("events").to_pylist()
    placed = {r["name"]: (tracks[r["track_id"]]["name"], r["lane"]) for r in rows}
    # THEN the launches are on the thread's runtime track at lane 0, not at the ops' depth 3
    assert placed["cudaLaunchKernel"] == ("trainer · runtime", 0)
    assert placed["aten::mm"] == ("trainer", 2)
    # AND the overlapping kernels take two lanes of their stream
    assert (placed["k1"], placed["k2"]) == (("stream 7", 0), ("stream 7", 1))
    assert sorted((t["name"], t["lanes"]) for t in tracks.values()) == [
        ("stream 7", 2),
        ("trainer", 3),
        ("trainer · runtime", 1),
    ]


def test_allocator_instants_are_placed_on_the_memory_s_device(tmp_path: Path) -> None:
    memory = {"ph": "i", "s": "t", "name": "[memory]", "pid": HOST_PID, "tid": 1, "ts": 5}
    events = [
        {**memory, "args": {"Addr": 1, "Bytes": 64, "Device Type": 1, "Device Id": 0, "Total Allocated": 64}},
        {**memory, "ts": 6, "args": {"Addr": 2, "Bytes": 8, "Device Type": 0, "Device Id": -1}},
    ]
    write_session(tmp_path / "profile", events)
    assert main(["ingest", str(tmp_path / "profile"), "--out", str(tmp_path / "ds")]) == 0
    opened = kinetoscope.open(tmp_path / "ds")
    tracks = {t["track_id"]: t["name"] for t in opened.table("tracks").to_pylist()}
    rows = opened.table("events").to_pylist()
    assert [(r["kind"], r["device"], tracks[r["track_id"]]) for r in rows] == [
        ("allocation", 0, "memory · device 0"),
        ("allocation", -1, "memory · host"),
    ]

"""verify's device-activity check and the light import's notes, on imported traces built here."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from kinetoscope.cli import main
from kinetoscope.verify import session_checks, trace_scan
from kinetoscope.verify.report import verify

from ..ingest.helpers import HOST_PID, kernel, x


def _imported(tmp_path: Path, events: list[dict[str, object]], *options: str) -> Path:
    trace = tmp_path / "worker0.pt.trace.json"
    trace.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    assert main(["import", str(trace), "--out", str(tmp_path / "sessions"), *options]) == 0
    return tmp_path / "sessions"


def _launches(count: int) -> list[dict[str, object]]:
    """``count`` cudaLaunchKernel calls, each with its flow start (Kineto's ac2g) as a GPU host writes them."""
    events: list[dict[str, object]] = [x("aten::mm", 0, 10 * count + 10)]
    for n in range(count):
        events.append(x("cudaLaunchKernel", 1 + 10 * n, 3, cat="cuda_runtime", correlation=100 + n))
        flow = {"ph": "s", "id": 100 + n, "pid": HOST_PID, "tid": 1, "ts": 1 + 10 * n, "cat": "ac2g"}
        events.append({**flow, "name": "ac2g"})
    return events


def test_launches_without_device_work_are_a_problem(tmp_path: Path) -> None:
    # GIVEN a GPU host's trace recorded with CPU activity only: 3 launches with flow starts, no kernel
    report = verify(_imported(tmp_path, _launches(3)))
    found = {f.check: f for f in report.all_findings()}
    # THEN verify names the missing device activity as a problem (not ok)
    assert found["no_device_activity"].severity == "problem"
    assert found["no_device_activity"].message.startswith("3 kernel launch call(s) but no device activity")
    assert report.exit_code == 1


def test_launches_with_their_kernels_are_not(tmp_path: Path) -> None:
    events = [*_launches(1), kernel("gemm", 20, 5, correlation=100)]
    assert "no_device_activity" not in {f.check for f in verify(_imported(tmp_path, events)).all_findings()}


def test_a_light_import_reports_nothing_missing(tmp_path: Path) -> None:
    # GIVEN a trace full of kernels, imported light (trace.json holds every event)
    events = [*_launches(1), kernel("gemm", 20, 5, correlation=100)]
    findings = verify(_imported(tmp_path, events, "--no-pb")).all_findings()
    # THEN no "left out by a light import" note: nothing is missing
    assert not any("light import" in f.message for f in findings)


def _npu_trace_view(tmp_path: Path, tasks: int, *, names_last: bool = False) -> Path:
    """torch_npu's ``trace_view.json``: a bare JSON list, string timestamps, the NPU's tasks on a process
    named "Ascend Hardware" (threads are streams) with no category; its process names first (as
    torch_npu writes them) or, ``names_last``, after the tasks."""

    def meta(kind: str, pid: int, name: str, tid: int = 0) -> dict[str, object]:
        return {"ph": "M", "name": kind, "pid": pid, "tid": tid, "args": {"name": name}}

    events: list[dict[str, object]] = [
        *(meta("process_name", 1, "Python"), meta("thread_name", 1, "Thread 1", 1)),
        *(meta("process_name", 3, "Ascend Hardware"), meta("thread_name", 3, "Stream 2", 2)),
        {"ph": "X", "name": "aten::mm", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": "1760000000000010.000", "dur": 50},
    ]
    for n in range(tasks):
        ts = f"{1760000000000100.0 + n * 300:.3f}"
        events.append({"ph": "X", "name": "aclnnMatmul_MatMulV2_MatMulV2", "pid": 3, "tid": 2, "ts": ts, "dur": 200,
                       "args": {"Task Type": "AI_CORE", "Stream Id": 2, "Task Id": n}})  # fmt: skip
    if names_last:
        events = events[4:] + events[:4]
    trace = tmp_path / "trace_view.json"
    trace.write_text(json.dumps(events))
    assert main(["import", str(trace), "--out", str(tmp_path / "sessions")]) == 0
    return tmp_path / "sessions"


def test_npu_device_tasks_are_placed_on_a_device(tmp_path: Path) -> None:
    # GIVEN torch_npu's trace with the process names first; WHEN verify scans it
    report = verify(_npu_trace_view(tmp_path, 3))
    checks = {f.check for f in report.all_findings()}
    # THEN its tasks are device work (model.device_processes): nothing unplaced, no missing device activity
    assert "device_work_unplaced" not in checks and "no_device_activity" not in checks
    assert report.sessions[0].scan is not None and report.sessions[0].scan.device_events == 3


def test_npu_device_tasks_that_cannot_be_placed_are_counted_and_said(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the process names written after the tasks, read in batches of two events
    monkeypatch.setattr(session_checks, "scan_trace", functools.partial(trace_scan.scan_trace, batch_size=2))
    report = verify(_npu_trace_view(tmp_path, 3, names_last=True))
    found = {f.check: f for f in report.all_findings()}
    # THEN verify is not ok: the 3 device tasks read before their process's name are named
    assert found["device_work_unplaced"].severity == "problem"
    assert found["device_work_unplaced"].message.startswith("3 event(s) of the 'Ascend Hardware' process")
    assert report.exit_code == 1

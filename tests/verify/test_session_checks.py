"""verify's device-activity check and the light import's notes, on imported traces built here."""

from __future__ import annotations

import json
from pathlib import Path

from kinetoscope.cli import main
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

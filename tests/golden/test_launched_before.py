"""Device work launched before the profiling window, on a real trace: counted, named, and optional."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kinetoscope.cli import main
from kinetoscope.verify.report import verify

from ..conftest import REPO

TRACE = REPO / "tests" / "data" / "dlrm_8rank" / "worker1_step_12.1694128201556.pt.trace.json.gz"


def test_work_launched_before_the_window_is_counted_named_and_can_be_left_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a real DLRM rank whose trace holds 64 device executions launched before profiling began
    assert main(["import", str(TRACE), "--out", str(tmp_path / "s")]) == 0
    notes = [f for f in verify(tmp_path / "s").all_findings() if f.check == "launched_before_window"]
    assert len(notes) == 1 and notes[0].message.startswith("64 device execution(s)")
    capsys.readouterr()
    # WHEN the summary runs with and without them
    assert main(["summary", str(tmp_path / "s"), "--json", "--top", "1000", "--only", "overview,top_kernels"]) == 0
    every = json.loads(capsys.readouterr().out)
    assert (
        main(
            [
                "summary",
                str(tmp_path / "s"),
                "--json",
                "--top",
                "1000",
                "--only",
                "top_kernels",
                "--window-launched-only",
            ]
        )
        == 0
    )
    windowed = json.loads(capsys.readouterr().out)
    # THEN the overview names them, and leaving them out lowers the kernel counts by exactly that many
    overview = every["analyses"]["overview"]["rows"][0]
    assert overview["launched_before_events"] == 64
    kernels, kernels_windowed = (doc["analyses"]["top_kernels"]["rows"] for doc in (every, windowed))
    assert sum(r["calls"] for r in kernels) - sum(r["calls"] for r in kernels_windowed) == 64

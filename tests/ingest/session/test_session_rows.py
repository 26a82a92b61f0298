"""The warnings a session's rows carry: a light import's packet files are no loss."""

from __future__ import annotations

import json
from pathlib import Path

from kinetoscope.cli import main
from kinetoscope.report.opening import open_dataset

from ..helpers import kernel, x


def test_a_light_import_leaves_no_data_loss_warning(tmp_path: Path) -> None:
    # GIVEN a trace full of kernels imported light (its packet files left out: trace.json holds the events)
    trace = tmp_path / "worker0.pt.trace.json"
    events = [x("cudaLaunchKernel", 0, 3, cat="cuda_runtime", correlation=1), kernel("gemm", 5, 5, correlation=1)]
    trace.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    assert main(["import", str(trace), "--out", str(tmp_path / "prof"), "--no-pb"]) == 0
    assert main(["ingest", str(tmp_path / "prof"), "--out", str(tmp_path / "ds")]) == 0
    with open_dataset(tmp_path / "ds") as dataset:
        warnings = dataset.load({"warnings": None})["warnings"]
    # THEN the dataset records no "mode_outcome" warning for them (the viewer showed two banners)
    assert "mode_outcome" not in warnings.column("kind").to_pylist()

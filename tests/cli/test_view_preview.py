"""Which inputs of `kinetoscope view` get a preview, and a whole that is ready first ends the preview's child."""

from __future__ import annotations

import json
from pathlib import Path

from starlette.applications import Starlette

from kinetoscope.cli.view_preview import build_in_child, preview_trace
from kinetoscope.viewer.serving.loading import Preparation

BUDGET = 10_000


def trace(path: Path, events: int) -> Path:
    body = [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.0 * i, "dur": 5.0}
            for i in range(events)]
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": body}, indent=2))
    return path


def test_raw_traces_over_three_budgets_get_a_preview_of_the_first(tmp_path: Path) -> None:
    small = trace(tmp_path / "rank0.pt.trace.json", events=20)
    assert small.stat().st_size < 3 * BUDGET
    assert preview_trace([small], BUDGET) is None
    (tmp_path / "big").mkdir()
    first = trace(tmp_path / "big" / "rank0.pt.trace.json", events=300)
    trace(tmp_path / "big" / "rank1.pt.trace.json", events=300)
    assert first.stat().st_size > 3 * BUDGET
    assert preview_trace([tmp_path / "big"], BUDGET) == first
    assert preview_trace([first], BUDGET) == first
    assert preview_trace([first], 0) is None  # --preview-mb 0
    assert preview_trace(["s3://bucket/ds"], BUDGET) is None


def test_a_dataset_gets_no_preview(tmp_path: Path) -> None:
    """Ingested already (only its index may be missing), whatever else its folder holds."""
    dataset = tmp_path / "ds"
    dataset.mkdir()
    (dataset / "_dataset.json").write_text("{}")
    trace(dataset / "rank0.pt.trace.json", events=300)
    assert preview_trace([dataset], BUDGET) is None


def test_a_whole_ready_first_ends_the_child(tmp_path: Path) -> None:
    source = trace(tmp_path / "rank0.pt.trace.json", events=50_000)
    preparation = Preparation()
    preparation.run(Starlette)
    (tmp_path / "preview").mkdir()
    assert build_in_child(source, tmp_path / "preview", BUDGET, preparation) is None
    assert not list((tmp_path / "preview").glob("**/*.duckdb"))  # stopped before it indexed anything


def test_the_whole_s_import_waits_for_the_preview(tmp_path: Path) -> None:
    """Until the preview answers the child has the CPU: the whole imports nothing."""
    import threading
    import time

    from kinetoscope.cli.view import prepared_dataset

    source = trace(tmp_path / "rank0.pt.trace.json", events=300)
    preparation = Preparation()
    preparation.expect_preview()
    done: list[object] = []
    whole = threading.Thread(target=lambda: done.append(prepared_dataset([source], preparation)), daemon=True)
    whole.start()
    deadline = time.monotonic() + 30
    while "waiting for the preview" not in preparation.snapshot()["message"] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert preparation.snapshot()["message"] == "waiting for the preview of the first events"
    whole.join(0.5)
    assert whole.is_alive() and not done
    assert not list(tmp_path.glob(".kinetoscope/traces/*/*"))  # not even a staging folder's sessions
    preparation.preview_over()
    whole.join(60)
    assert done and preparation.snapshot()["stage"] == "ingest"


def test_a_preview_that_fails_frees_the_whole(tmp_path: Path) -> None:
    from kinetoscope.cli.view_preview import start_preview

    source = trace(tmp_path / "rank0.pt.trace.json", events=300)
    preparation = Preparation()

    def broken(index: object) -> Starlette:
        raise RuntimeError("no app")

    start_preview([source], BUDGET, preparation, broken).join(60)
    assert preparation.wait_for_preview(0)
    assert preparation.preview_app is None


def test_no_preview_holds_nothing() -> None:
    assert Preparation().wait_for_preview(0)

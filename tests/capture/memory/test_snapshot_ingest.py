"""A real CPU run with memory history: its snapshot's allocations reach the dataset, on the trace
clock, joined to the trace's allocator events and to the frame tree."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
from torch.profiler import profile

import kinetoscope
from kinetoscope import ProfileConfig, ProfileMode, Profiler
from kinetoscope.capture.memory import snapshots
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from ...conftest import requires_cxx

pytestmark = requires_cxx


@pytest.fixture(autouse=True)
def _no_history_left_behind(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(snapshots, "_latest_session", None)
    yield
    kinetoscope.memory.record_memory_history(enabled=False)


def test_snapshot_allocations_join_the_trace(tmp_path: Path) -> None:
    kinetoscope.memory.record_memory_history()
    config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=tmp_path / "prof")
    exporter = Profiler(config)
    with profile(
        activities=kinetoscope.activities(),
        experimental_config=config,
        on_trace_ready=exporter.export_trace,
        profile_memory=True,
    ):
        x = torch.randn(64, 64)
        for _ in range(3):
            x = torch.relu(x @ x)
    exporter.export_snapshot()
    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")).status == "ok"
    with open_dataset(tmp_path / "ds") as ds:
        (row,) = ds.sql(
            "SELECT count(*) AS n, count_if(a.event_id >= 0) AS joined, "
            "count_if(e.name = '[memory]') AS memory_events, count_if(f.stack_id IS NOT NULL) AS stacks "
            "FROM allocations a LEFT JOIN events e ON e.id = a.event_id "
            "LEFT JOIN frames f ON f.stack_id = a.stack_id"
        ).to_pylist()
        window = ds.sql("SELECT min(start_ns) AS start_ns, max(stop_ns) AS stop_ns FROM sessions").to_pylist()[0]
        joined = ds.sql(
            "SELECT a.alloc_ts_ns, e.ts_ns FROM allocations a JOIN events e ON e.id = a.event_id"
        ).to_pylist()
    assert row["n"] > 0 and row["joined"] > 0 and row["joined"] == row["memory_events"]
    assert row["stacks"] > 0
    for pair in joined:
        assert window["start_ns"] - 10**9 <= pair["alloc_ts_ns"] <= window["stop_ns"] + 10**9
        assert abs(pair["alloc_ts_ns"] - pair["ts_ns"]) < 5_000_000

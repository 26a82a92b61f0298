"""Session directories never collide, even for exporters started in the same microsecond."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from torch.profiler import profile

import kinetoscope
from kinetoscope import ProfileConfig, ProfileMode, Profiler
from kinetoscope.capture.profiling import session as session_module
from kinetoscope.format.session_files import session_dir as layout

from ..helpers import check_complete_session


def test_two_exporters_in_one_microsecond_get_distinct_sessions(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    frozen = session_module.clock_snapshot()
    monkeypatch.setattr(session_module, "clock_snapshot", lambda: frozen)
    paths = []
    for _ in range(3):
        config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=tmp_path)
        exporter = Profiler(config)
        with profile(activities=kinetoscope.activities(), experimental_config=config,
                     on_trace_ready=exporter.export_trace):
            torch.ones(3).sum()
        paths.extend(exporter.sessions)
    assert len(set(paths)) == 3 and len({p.parent for p in paths}) == 1
    expected = [layout.timestamp_dir_name(frozen.realtime_ns + 1000 * i, 0) for i in range(3)]
    assert sorted(p.name for p in paths) == expected
    for path in paths:
        check_complete_session(path)


def test_write_probe_leaves_other_processes_files_alone(tmp_path: Path) -> None:
    # a process on another host with this pid, probing the same shared directory
    other = tmp_path / f".kinetoscope-write-test-{os.getpid()}"
    other.write_text("someone else's")
    Profiler(ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=tmp_path))
    assert other.read_text() == "someone else's"
    assert [p.name for p in tmp_path.iterdir()] == [other.name]

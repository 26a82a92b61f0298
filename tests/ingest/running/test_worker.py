"""Jobs sent to worker processes (and to a cluster's workers) as JSON text."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from kinetoscope.format.kineto.trace_source import GzipLimits, limited_by
from kinetoscope.ingest.running import worker
from kinetoscope.ingest.session.session_ingest import SessionJob
from kinetoscope.sessions.sources import SessionSource


def test_a_job_carries_the_callers_gzip_limits_to_its_worker(tmp_path: Path) -> None:
    # GIVEN a job planned where the command line raised the gzip limits
    source = SessionSource(tmp_path, "host_pid_1/t", 0, 0, None, "")
    limits = GzipLimits(max_ratio=1000, max_bytes=1 << 40)
    with limited_by(limits):
        job = SessionJob(source, "run", tmp_path / "ds", "key", "fingerprint", 10, 1 << 20)
    # WHEN it travels to a worker THEN it still has them (a worker reads no environment)
    assert job.gzip_limits == limits
    assert worker.job_from_json(worker.job_to_json(job)).gzip_limits == limits


def test_a_worker_maps_large_blocks_on_their_own(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a worker process's start, its mallopt calls recorded, and no job to run
    asked: list[int] = []
    monkeypatch.setattr(worker, "map_large_blocks", lambda: asked.append(1) or True)
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    # WHEN it serves
    worker.main()
    # THEN it asked once that the blocks of a session-wide step go back to the system once freed
    assert asked == [1]

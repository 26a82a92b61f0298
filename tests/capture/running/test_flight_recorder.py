"""``kinetoscope run --flight-recorder``: unmodified programs that run out of memory, or get the
dump signal, leave a memory-snapshot session that verify accepts and ingest reads (real child processes)."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path

import pytest

import kinetoscope
from kinetoscope.capture.running import run_settings as rs
from kinetoscope.format.session_files import snapshot as snap
from kinetoscope.format.session_files import trace_info as ti

from ...conftest import PYTHON, requires_cxx
from ...torchrun import job_failed
from .test_run import kinetoscope as run_kinetoscope

pytestmark = [pytest.mark.slow, requires_cxx]

# Keeps 8 tensors of 1 MiB alive (an OOM dump shows them live), then the ending in argv[1].
SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    import torch

    def grow():
        return [torch.ones(256 * 1024) for _ in range(8)]

    kept = grow()
    if sys.argv[1] == "oom":
        raise MemoryError("pretend the allocator ran out")
    os.kill(os.getpid(), signal.SIGUSR2)
    more = [torch.zeros(1024) for _ in range(3)]  # the program goes on after the dump
    print("carried on", len(kept) + len(more))
    """
)


def run_script(tmp_path: Path, ending: str, *options: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    script = tmp_path / "grow.py"
    script.write_text(SCRIPT)
    out = tmp_path / "out"
    done = run_kinetoscope("run", "--flight-recorder", *options, "--out", str(out), "--", PYTHON, str(script), ending)
    return done, out


def only_session(out: Path) -> tuple[Path, object]:
    (session,) = out.glob("*_pid_*/*")
    info = ti.read_trace_info(session)
    assert info.state == ti.SessionState.SESSION_STATE_COMPLETE and not info.config.modes
    assert not (session / "trace.json").exists()
    return session, info


def test_an_out_of_memory_error_dumps_a_snapshot_that_ingest_reads(tmp_path: Path) -> None:
    done, out = run_script(tmp_path, "oom")
    assert done.returncode == 1 and "MemoryError: pretend the allocator ran out" in done.stderr  # still reported
    session, info = only_session(out)
    (entry,) = info.memory_snapshots
    assert entry.trigger == "out of memory: MemoryError: pretend the allocator ran out"
    assert entry.live_bytes >= 8 * 1024 * 1024 and entry.max_entries == rs.DEFAULT_FLIGHT_MAX_ENTRIES
    assert f"memory snapshot ({entry.trigger}) written: {session / entry.file}" in done.stderr
    snapshot = snap.load_snapshot(session / entry.file)
    frames = [f for e in snapshot["device_traces"][0] if e["action"] == "alloc" for f in e["frames"]]
    assert any(f["name"] == "grow" and f["filename"].endswith("grow.py") for f in frames)

    verified = run_kinetoscope("verify", "--json", str(out))
    assert verified.returncode == 0, job_failed(verified)
    assert "memory_only" in verified.stdout and '"no_trace"' not in verified.stdout
    dataset = tmp_path / "ds"
    ingested = run_kinetoscope("ingest", str(out), "--out", str(dataset))
    assert ingested.returncode == 0, job_failed(ingested)
    with kinetoscope.open(dataset) as ds:
        assert ds.table("allocations").num_rows >= 8


def test_the_dump_signal_writes_a_snapshot_and_the_program_carries_on(tmp_path: Path) -> None:
    done, out = run_script(tmp_path, "signal", "--flight-max-entries", "500")
    assert done.returncode == 0, job_failed(done)
    assert "carried on 11" in done.stdout
    _, info = only_session(out)
    (entry,) = info.memory_snapshots
    assert entry.trigger == "signal SIGUSR2" and entry.max_entries == 500 and entry.entries > 0
    assert "1 session(s) under" in done.stderr


def test_print_env_carries_the_flight_recorder_settings(tmp_path: Path) -> None:
    done = run_kinetoscope("run", "--flight-recorder", "--dump-signal", "USR1", "--print-env")
    assert done.returncode == 0, job_failed(done)
    assert "KINETOSCOPE_FLIGHT_RECORDER=1" in done.stdout and "KINETOSCOPE_DUMP_SIGNAL=SIGUSR1" in done.stdout
    settings = rs.from_env({"KINETOSCOPE_FLIGHT_RECORDER": "1", "KINETOSCOPE_DUMP_SIGNAL": "12"})
    assert settings.flight_recorder and settings.schedule is None and settings.dump_signal == "SIGUSR2"

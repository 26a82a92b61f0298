"""A job killed with SIGKILL mid-profile keeps its samples up to the last flush."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

from kinetoscope.cli import main as cli_main
from kinetoscope.format.perfetto_packets.reader import read_packet_file
from kinetoscope.format.session_files import trace_info as ti

from ..conftest import PYTHON, python_env

SCRIPT = textwrap.dedent(
    """
    import sys, time, torch
    from torch.profiler import profile
    import kinetoscope
    from kinetoscope import ProfileConfig, ProfileMode, Profiler

    config = ProfileConfig(modes=[ProfileMode.RUNTIME, ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY],
                           profile_output_dir=sys.argv[1], sample_interval_ms=20)
    exporter = Profiler(config)
    with profile(activities=kinetoscope.activities(), experimental_config=config,
                 on_trace_ready=exporter.export_trace):
        print("profiling", flush=True)
        while True:
            torch.randn(64, 64) @ torch.randn(64, 64)
            time.sleep(0.01)
    """
)


def test_sigkill_mid_profile_leaves_readable_samples(tmp_path: Path, capsys: object) -> None:
    out = tmp_path / "out"
    proc = subprocess.Popen([PYTHON, "-c", SCRIPT, str(out)], env=python_env(), stdout=subprocess.PIPE)
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == b"profiling"
    time.sleep(2.5)  # at least two flushes
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()

    (session,) = out.glob("*/*")
    # the session is recognisably incomplete
    info = ti.read_trace_info(session)
    assert ti.state_name(info.state) == "IN_PROGRESS"
    assert not (session / "trace.json").exists()
    assert cli_main(["dump", str(session / "trace_info.pb")]) == 1

    # the sampler helper notices its parent is gone and exits; its files stay readable
    deadline = time.monotonic() + 10
    for name in ("cpu_util.pb.partial", "host_mem.pb.partial"):
        partial = session / name
        assert partial.exists()
        samples = 0
        while time.monotonic() < deadline:
            result = read_packet_file(partial)
            samples = sum(1 for p in result.packets if p.HasField("track_event"))
            if samples:
                break
            time.sleep(0.1)
        assert result.header is not None and result.header.pid == proc.pid
        # 2.5 s at 20 ms, flushed at least once a second: well over one second of samples survive
        stamps = sorted({p.timestamp for p in result.packets if p.HasField("track_event")})
        assert len(stamps) >= 40, len(stamps)
        assert stamps[-1] - stamps[0] >= 1_000_000_000
    status = cli_main(["dump", str(session / "host_mem.pb.partial")])
    assert status in (0, 1)
    assert "PARTIAL FILE" in capsys.readouterr().out  # type: ignore[attr-defined]

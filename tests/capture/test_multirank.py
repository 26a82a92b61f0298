"""Real multi-process jobs: four ranks, one rank killed mid-profile, many writers in one directory."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from kinetoscope.format.perfetto_packets.reader import read_packet_file
from kinetoscope.format.session_files import trace_info as ti

from ..conftest import PYTHON, python_env
from ..test_examples import check_rank_sessions
from ..torchrun import EXAMPLES, job_failed, run_torchrun, sessions_by_rank, torchrun_command
from .helpers import check_complete_session, load_trace

pytestmark = pytest.mark.slow

PROFILE_WITH_COLLECTIVES = textwrap.dedent(
    """
    import os, sys, time, torch
    import torch.distributed as dist
    from torch.profiler import profile
    import kinetoscope
    from kinetoscope import ProfileConfig, ProfileMode, Profiler

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    out, ready = sys.argv[1], sys.argv[2]
    config = ProfileConfig(modes=[ProfileMode.RUNTIME, ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY],
                           profile_output_dir=out, sample_interval_ms=20)
    exporter = Profiler(config)
    a, t = torch.randn(256, 256), torch.randn(64 * 1024)
    with profile(activities=kinetoscope.activities(), experimental_config=config, with_stack=True,
                 on_trace_ready=exporter.export_trace):
        with open(os.path.join(ready, f"rank{rank}"), "w") as marker:
            marker.write(str(os.getpid()))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            a @ a
            dist.all_reduce(t)
            time.sleep(0.005)
    """
)


def test_multi_rank_example_four_ranks(tmp_path: Path) -> None:
    done = run_torchrun(EXAMPLES / "multi_rank.py", 4, str(tmp_path))
    assert done.returncode == 0, job_failed(done)
    check_rank_sessions(tmp_path, 4)


def test_rank_killed_mid_profile_leaves_the_others_complete(tmp_path: Path) -> None:
    out, ready, script = tmp_path / "out", tmp_path / "ready", tmp_path / "job.py"
    ready.mkdir()
    script.write_text(PROFILE_WITH_COLLECTIVES)
    job = subprocess.Popen(torchrun_command(script, 3, str(out), str(ready)), env=python_env(),
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    victim = wait_for_ranks(ready, 3, job)[1]
    time.sleep(1.5)  # the sample files are flushed at least once a second
    os.kill(victim, signal.SIGKILL)
    _, stderr = job.communicate(timeout=120)
    assert job.returncode != 0

    sessions = sessions_by_rank(out)
    assert sorted(sessions) == [0, 1, 2], stderr[-3000:]
    for rank in (0, 2):
        session, _ = sessions[rank]
        check_complete_session(session)
        assert any(e.get("name") == "gloo:all_reduce" for e in load_trace(session)["traceEvents"])
    killed, info = sessions[1]
    assert ti.state_name(info.state) == "IN_PROGRESS" and info.identity.pid == victim
    for name in ("cpu_util.pb.partial", "host_mem.pb.partial"):
        partial = read_packet_file(killed / name)
        assert partial.header is not None and (partial.header.rank, partial.header.world_size) == (1, 3)
        stamps = sorted({p.timestamp for p in partial.packets if p.HasField("track_event")})
        assert len(stamps) >= 20 and stamps[-1] - stamps[0] >= 500_000_000


def wait_for_ranks(ready: Path, world_size: int, job: subprocess.Popen[str]) -> list[int]:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        markers = [ready / f"rank{r}" for r in range(world_size)]
        if all(m.exists() and m.read_text() for m in markers):
            return [int(m.read_text()) for m in markers]
        assert job.poll() is None, job.communicate()[1][-3000:]
        time.sleep(0.05)
    raise AssertionError("ranks did not start profiling")


WRITERS = 4
MANY_WRITERS = textwrap.dedent(
    """
    import os, sys, time, torch
    from torch.profiler import profile, schedule
    import kinetoscope
    from kinetoscope import ProfileConfig, ProfileMode, Profiler

    out, ready, go = sys.argv[1], sys.argv[2], sys.argv[3]
    config = ProfileConfig(modes=[ProfileMode.RUNTIME, ProfileMode.HOST_MEMORY], profile_output_dir=out)
    exporter = Profiler(config)
    open(os.path.join(ready, os.environ["RANK"]), "w").close()
    while not os.path.exists(go):
        time.sleep(0.001)
    with profile(activities=kinetoscope.activities(), experimental_config=config,
                 schedule=schedule(wait=0, warmup=0, active=1, repeat=2), on_trace_ready=exporter.export_trace) as p:
        for _ in range(2):
            torch.randn(32, 32).sum()
            p.step()
    """
)


def test_many_processes_share_one_output_directory(tmp_path: Path) -> None:
    out, ready, go, script = tmp_path / "out", tmp_path / "ready", tmp_path / "go", tmp_path / "writer.py"
    ready.mkdir()
    script.write_text(MANY_WRITERS)
    env = python_env() | {"KINETOSCOPE_INSTANCE_ID": "one-host", "WORLD_SIZE": str(WRITERS)}
    writers = [subprocess.Popen([PYTHON, str(script), str(out), str(ready), str(go)], env=env | {"RANK": str(r)},
                                stderr=subprocess.PIPE, text=True) for r in range(WRITERS)]
    deadline = time.monotonic() + 120
    while len(list(ready.iterdir())) < WRITERS and time.monotonic() < deadline:
        time.sleep(0.05)
    go.touch()  # all start their profilers together
    for writer in writers:
        assert writer.wait(timeout=120) == 0, writer.communicate()[1][-2000:]

    sessions = sorted(out.glob("*/*"))
    assert len(sessions) == 2 * WRITERS and len({s.parent for s in sessions}) == WRITERS
    ranks = sorted(check_complete_session(s).identity.rank for s in sessions)
    assert ranks == sorted(list(range(WRITERS)) * 2)
    assert not list(out.glob("**/*.tmp")) and not list(out.glob("**/*.partial"))

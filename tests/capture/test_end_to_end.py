"""Real torch.profiler runs through the kinetoscope API, checked file by file."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.profiler import profile, schedule

import kinetoscope
from kinetoscope import ProfileConfig, ProfileMode, Profiler, SessionError
from kinetoscope.capture.environment import device_count
from kinetoscope.cli import main as cli_main
from kinetoscope.format.perfetto_packets.reader import read_packet_file
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti

from .helpers import check_complete_session, load_trace, tiny_model

ALL = [ProfileMode.DEVICE, ProfileMode.RUNTIME, ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY]


def run_basic(out: Path, **profile_kwargs: Any) -> Profiler:
    """The seed's basic example, through kinetoscope's API."""
    config = ProfileConfig(modes=ALL, profile_output_dir=out, sample_interval_ms=10)
    exporter = Profiler(config)
    model, x = tiny_model()
    with torch.no_grad():
        for _ in range(3):
            model(x)
    with (
        profile(
            activities=kinetoscope.activities(),
            experimental_config=config,
            on_trace_ready=exporter.export_trace,
            record_shapes=True,
            with_stack=True,
            **profile_kwargs,
        ) as _prof,
        torch.no_grad(),
    ):
        for _ in range(30):
            model(x)
        torch.ones(1).add_(1)
        import time

        time.sleep(0.15)
        kinetoscope.synchronize()
    return exporter


def test_seed_basic_example_tree_and_every_file(tmp_path: Path) -> None:
    exporter = run_basic(tmp_path)
    # the tree: <out>/<instance>_pid_<pid>/<timestamp>/
    (process_dir,) = tmp_path.iterdir()
    assert process_dir.name.endswith(f"_pid_{os.getpid()}")
    (session,) = process_dir.iterdir()
    assert exporter.sessions == [session] and exporter.current_session == session
    assert layout.parse_session_path(session) is not None

    info = check_complete_session(session)
    names = {f.name for f in info.files}
    assert {"trace.json", "ntrace.pb", "cpu_util.pb", "host_mem.pb"} <= names
    assert info.identity.pid == os.getpid() and info.identity.rank == 0 and info.identity.world_size == 1
    assert not info.identity.rank_known
    assert info.versions.torch == torch.__version__
    assert info.profiler_options.record_shapes and info.profiler_options.with_stack
    assert info.profiler_options.activities == ["CPU"] or "CUDA" in info.profiler_options.activities
    assert info.start_clocks.realtime_ns < info.stop_clocks.realtime_ns
    assert info.profiler_base_time_ns > 0

    # the framework trace is torch's own export
    trace = load_trace(session)
    assert any(e.get("name") == "aten::addmm" for e in trace["traceEvents"])
    assert trace["traceName"] == str(session / "trace.json")  # its final name, not the temporary one
    # the sampler runs in its own process, so it never shows in the job's Python stack trace
    assert not any("sampler" in str(e.get("name", "")) for e in trace["traceEvents"])

    # every packet file has a header that identifies session, process and rank
    for name in ("ntrace.pb", "cpu_util.pb", "host_mem.pb"):
        result = read_packet_file(session / name)
        assert result.problems == []
        assert result.header is not None
        assert result.header.session_id == info.identity.session_id
        assert result.header.pid == os.getpid() and result.header.rank == 0

    # samples lie inside the profiled window, on the realtime clock
    for name, per_tick in (("cpu_util.pb", os.cpu_count() or 1), ("host_mem.pb", 4)):
        stamps = [p.timestamp for p in read_packet_file(session / name).packets if p.HasField("track_event")]
        assert len(stamps) >= 2 * per_tick
        window = (info.start_clocks.realtime_ns - 10**9, info.stop_clocks.realtime_ns + 10**9)
        assert window[0] <= min(stamps) <= max(stamps) <= window[1]

    outcomes = {ti.mode_name(m.mode): m for m in info.modes}
    assert set(outcomes) == {"DEVICE", "RUNTIME", "CPU_UTIL", "HOST_MEMORY"}
    if device_count() == 0:
        assert "no accelerator" in outcomes["DEVICE"].reason and not outcomes["DEVICE"].files


def test_schedule_makes_one_session_per_active_cycle(tmp_path: Path) -> None:
    config = ProfileConfig(modes=[ProfileMode.RUNTIME, ProfileMode.CPU_UTIL], profile_output_dir=tmp_path)
    exporter = Profiler(config)
    model, x = tiny_model()
    with profile(
        activities=kinetoscope.activities(),
        schedule=schedule(wait=1, warmup=1, active=2, repeat=2),
        experimental_config=config,
        on_trace_ready=exporter.export_trace,
    ) as prof:
        for _ in range(10):
            model(x)
            prof.step()
    assert len(exporter.sessions) == 2
    assert len({p.name for p in exporter.sessions}) == 2
    cycles = []
    for session in exporter.sessions:
        info = check_complete_session(session)
        cycles.append(info.identity.cycle)
        assert info.profiler_options.scheduled
        steps = {e["name"] for e in load_trace(session)["traceEvents"] if e.get("name", "").startswith("ProfilerStep#")}
        assert len(steps) == 2
    assert cycles == [0, 1]
    assert sorted(exporter.sessions) == exporter.sessions  # timestamp folders sort in cycle order


def test_all_six_profile_arguments_are_recorded(tmp_path: Path) -> None:
    config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=tmp_path)
    exporter = Profiler(config)
    model, x = tiny_model()
    with profile(
        activities=kinetoscope.activities(),
        schedule=schedule(wait=0, warmup=0, active=1),
        on_trace_ready=exporter.export_trace,
        record_shapes=True,
        with_flops=True,
        profile_memory=True,
        with_stack=True,
        experimental_config=config,
    ) as prof:
        for _ in range(2):
            model(x)
            prof.step()
    options = check_complete_session(exporter.sessions[0]).profiler_options
    assert (options.record_shapes, options.with_flops, options.profile_memory, options.with_stack) == (True,) * 4
    events = load_trace(exporter.sessions[0])["traceEvents"]
    assert any("Input Dims" in e.get("args", {}) for e in events)  # record_shapes took effect
    assert prof.with_flops and prof.profile_memory


def test_export_twice_for_one_cycle_raises(tmp_path: Path) -> None:
    config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=tmp_path)
    exporter = Profiler(config)
    with profile(
        activities=kinetoscope.activities(), experimental_config=config, on_trace_ready=exporter.export_trace
    ) as prof:
        torch.ones(3).sum()
    with pytest.raises(SessionError, match="already exported"):
        exporter.export_trace(prof)
    assert len(exporter.sessions) == 1


def test_export_of_a_profiler_that_never_ran_raises(tmp_path: Path) -> None:
    config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=tmp_path)
    exporter = Profiler(config)
    prof = profile(activities=kinetoscope.activities(), experimental_config=config)
    with pytest.raises(SessionError, match="has not run"):
        exporter.export_trace(prof)


def test_export_with_another_config_raises(tmp_path: Path) -> None:
    exporter = Profiler(ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=tmp_path))
    other = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=tmp_path)
    with profile(activities=kinetoscope.activities(), experimental_config=other) as prof:
        torch.ones(3).sum()
    with pytest.raises(SessionError, match="same ProfileConfig"):
        exporter.export_trace(prof)


def test_unwritable_output_dir_fails_before_profiling(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    config = ProfileConfig(profile_output_dir=blocker / "sub")
    with pytest.raises(SessionError, match="not writable"):
        Profiler(config)


def test_disk_full_during_export_leaves_a_visibly_failed_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ProfileConfig(modes=[ProfileMode.RUNTIME, ProfileMode.HOST_MEMORY], profile_output_dir=tmp_path)
    exporter = Profiler(config)

    def full_disk(self: Any, path: str, *args: Any, **kwargs: Any) -> None:
        Path(path).write_text('{"traceEvents": [')  # a half-written temporary file
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(profile, "export_chrome_trace", full_disk)
    with (
        pytest.raises(SessionError, match="No space left on device"),
        profile(activities=kinetoscope.activities(), experimental_config=config, on_trace_ready=exporter.export_trace),
    ):
        torch.ones(3).sum()
    (session,) = tmp_path.glob("*/*")
    assert not (session / "trace.json").exists()
    assert not list(session.glob("*.tmp"))
    info = ti.read_trace_info(session)
    assert ti.state_name(info.state) == "FAILED" and "No space left" in info.error
    assert cli_main(["dump", str(session / "trace_info.pb")]) == 1
    assert "INCOMPLETE SESSION" in capsys.readouterr().out


def test_instance_id_override(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KINETOSCOPE_INSTANCE_ID", "i-0abc/../x")
    exporter = run_basic(tmp_path)
    session = exporter.sessions[0]
    assert session.parent.name == f"i-0abc-..-x_pid_{os.getpid()}".replace("-..-", "-..-")
    assert session.parent.parent == tmp_path
    info = ti.read_trace_info(session)
    assert info.identity.instance_source == "env"


def test_rank_from_torchrun_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "4")
    exporter = run_basic(tmp_path)
    ident = ti.read_trace_info(exporter.sessions[0]).identity
    assert (ident.rank, ident.local_rank, ident.world_size, ident.rank_known) == (3, 1, 4, True)
    header = read_packet_file(exporter.sessions[0] / "cpu_util.pb").header
    assert header is not None and (header.rank, header.world_size) == (3, 4)

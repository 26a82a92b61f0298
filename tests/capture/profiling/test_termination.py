"""SIGTERM while profiling (how torchrun stops the surviving ranks) still leaves a sealed session."""

from __future__ import annotations

import os
import signal
import subprocess
import textwrap
import time
from pathlib import Path

from kinetoscope.capture.profiling import termination

from ...conftest import PYTHON, python_env
from ..helpers import check_complete_session, load_trace

PROFILE_UNTIL_TERMINATED = textwrap.dedent(
    """
    import sys, time, torch
    from torch.profiler import profile
    import kinetoscope
    from kinetoscope import ProfileConfig, ProfileMode, Profiler

    config = ProfileConfig(modes=[ProfileMode.RUNTIME, ProfileMode.HOST_MEMORY], profile_output_dir=sys.argv[1])
    exporter = Profiler(config)
    with profile(activities=kinetoscope.activities(), experimental_config=config, with_stack=True,
                 on_trace_ready=exporter.export_trace):
        print("profiling", flush=True)
        while True:
            torch.randn(64, 64) @ torch.randn(64, 64)
    """
)


def test_sigterm_mid_profile_seals_the_session_and_exits_143(tmp_path: Path) -> None:
    proc = subprocess.Popen([PYTHON, "-c", PROFILE_UNTIL_TERMINATED, str(tmp_path)], env=python_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdout is not None and proc.stdout.readline().strip() == b"profiling"
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=60) == 143
    (session,) = tmp_path.glob("*/*")
    check_complete_session(session)
    assert any(e.get("name") == "aten::mm" for e in load_trace(session)["traceEvents"])


def test_sigterm_during_export_waits_for_the_export() -> None:
    code = textwrap.dedent(
        """
        import os, signal, sys
        from kinetoscope.capture.profiling import termination
        termination.arm()
        with termination.exporting():
            os.kill(os.getpid(), signal.SIGTERM)
            print("export finished", flush=True)
        termination.disarm()
        print("not reached", flush=True)
        """
    )
    done = subprocess.run([PYTHON, "-c", code], env=python_env(), capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.stdout.splitlines() == ["export finished"]
    assert done.returncode == -signal.SIGTERM


def test_a_handler_the_job_installed_is_left_alone() -> None:
    def own_handler(_signum: int, _frame: object) -> None:
        pass

    previous = signal.signal(signal.SIGTERM, own_handler)
    try:
        termination.arm()
        assert signal.getsignal(signal.SIGTERM) is own_handler
        termination.disarm()
        assert signal.getsignal(signal.SIGTERM) is own_handler
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_disarm_restores_the_default_action() -> None:
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    termination.arm()
    assert termination.armed()
    termination.disarm()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_signals_inside_torch_profiler_code_are_held_back() -> None:
    import sys

    import torch
    from torch.profiler import profile

    seen: list[bool] = []
    with profile(on_trace_ready=lambda _p: seen.append(termination.in_torch_profiler(sys._getframe()))):
        torch.ones(2).sum()
    assert seen == [True]
    assert not termination.in_torch_profiler(sys._getframe())


CTRL_C_DURING_EXPORT = textwrap.dedent(
    """
    import os, signal, sys, torch
    from torch.profiler import profile
    import kinetoscope
    # Ctrl-C as in a terminal: a job started in the background by a shell without job control
    # (as a CI runner may start the tests) inherits SIGINT ignored, and Python keeps it so.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from kinetoscope import ProfileConfig, ProfileMode, Profiler
    from kinetoscope.capture.profiling import profiler as capture_profiler

    real_write = capture_profiler.write_framework_trace

    def interrupted_write(prof, session_path):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C arrives while torch writes the framework trace
        return real_write(prof, session_path)

    capture_profiler.write_framework_trace = interrupted_write
    config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=sys.argv[1])
    exporter = Profiler(config)
    try:
        with profile(activities=kinetoscope.activities(), experimental_config=config,
                     on_trace_ready=exporter.export_trace):
            torch.randn(64, 64) @ torch.randn(64, 64)
    except KeyboardInterrupt:
        print("interrupted after the export", flush=True)
        sys.exit(130)
    """
)


def test_ctrl_c_during_export_keeps_the_framework_trace_and_still_interrupts(tmp_path: Path) -> None:
    done = subprocess.run([PYTHON, "-c", CTRL_C_DURING_EXPORT, str(tmp_path)], env=python_env(), capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 130 and "interrupted after the export" in done.stdout, done.stderr
    (session,) = tmp_path.glob("*/*")
    check_complete_session(session)
    assert any(e.get("name") == "aten::mm" for e in load_trace(session)["traceEvents"])

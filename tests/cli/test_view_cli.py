"""`kinetoscope view` end to end: a real process serving a dataset, with and without the access token."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from kinetoscope.cli import main

from ..conftest import PYTHON, python_env
from ..kineto_gen import TrainingSpec, write_dataset


def serve(dataset: Path, *extra: str, head: list[str] | None = None) -> tuple[subprocess.Popen[str], str]:
    """``kinetoscope view`` started, and its URL; ``head`` gets the lines printed up to it."""
    proc = subprocess.Popen([PYTHON, "-m", "kinetoscope", "view", str(dataset), "--no-browser", "--port", "0", *extra],
                            env=python_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    for line in proc.stdout:
        if head is not None:
            head.append(line)
        found = re.search(r"(http://\S+)", line)
        if found:
            return proc, found.group(1)
    proc.kill()
    raise AssertionError("view printed no URL")


def wait_ready(url: str) -> None:
    """Waits (at most a minute) until the dataset behind the printed `url` is ready."""
    base, token = url.split("?token=")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with urllib.request.urlopen(base + f"api/progress?token={token}", timeout=30) as response:
            state = json.loads(response.read())
        assert state["error"] is None, state
        if state["ready"]:
            return
        time.sleep(0.1)
    raise AssertionError(f"{url}: not ready after a minute")


def status_of(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2"])
def test_view_on_loopback_requires_the_printed_token_too(tmp_path: Path, host: str) -> None:
    """Any local user or any web page can reach a loopback port: only the printed URL opens the API."""
    dataset = write_dataset(tmp_path / "ds", TrainingSpec(ranks=1, steps=1, layers=2))
    proc, url = serve(dataset, "--host", host)
    try:
        base, token = url.split("?token=")
        assert base.startswith(f"http://{host}:") and len(token) >= 24
        wait_ready(url)
        assert status_of(base + "api/meta") == 401
        assert status_of(base + "api/sql.csv?q=SELECT%201") == 401
        assert status_of(url) == 200
        with urllib.request.urlopen(base + f"api/meta?token={token}", timeout=30) as response:
            assert json.loads(response.read())["event_count"] > 0
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_view_on_another_address_requires_the_printed_token(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "ds", TrainingSpec(ranks=1, steps=1, layers=2))
    proc, url = serve(dataset, "--host", "0.0.0.0")
    try:
        token = url.split("token=")[1]
        base = url.split("?")[0]
        assert len(token) >= 24
        wait_ready(url)
        assert status_of(base + "api/meta") == 401
        assert status_of(base + f"api/meta?token={token}") == 200
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_view_of_a_missing_path_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", str(tmp_path / "nope"), "--no-browser"]) == 2
    assert "no such file or directory" in capsys.readouterr().err


@pytest.mark.slow
def test_ctrl_c_just_after_index_ready_stops_cleanly(tmp_path: Path) -> None:
    """Ctrl+C while the dataset's helper threads still run in DuckDB (just after "index ready"):
    before, the native teardown aborted the process (SIGABRT) in about 1 run in 3 here."""
    dataset = write_dataset(tmp_path / "ds", TrainingSpec(ranks=1, steps=1, layers=2))
    statuses = []
    for _ in range(8):
        proc = subprocess.Popen([PYTHON, "-m", "kinetoscope", "view", str(dataset), "--no-browser", "--port", "0"],
                                env=python_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert proc.stdout is not None
        for line in proc.stdout:
            if "index ready" in line:
                proc.send_signal(signal.SIGINT)
                break
        rest = proc.stdout.read()
        statuses.append((proc.wait(timeout=60), "terminate called" in rest or "Traceback" in rest))
    assert statuses == [(130, False)] * 8


def test_leave_runs_exit_functions_then_ends_beside_a_helper_thread(tmp_path: Path) -> None:
    code = """
import atexit, threading, time
from kinetoscope.cli.view import leave
atexit.register(lambda: print("exit functions ran", flush=True))
threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
leave(7)
print("not reached")
"""
    argv = [PYTHON, "-c", code]
    done = subprocess.run(argv, check=False, env=python_env(), capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout) == (7, "exit functions ran\n")

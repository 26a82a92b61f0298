"""`kinetoscope view` end to end: a real process serving a dataset, with and without the access token."""

from __future__ import annotations

import json
import re
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


def test_view_of_a_memory_snapshot_says_it_needs_a_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = tmp_path / "memory.pickle"
    snapshot.write_bytes(b"\x80\x04}\x94.")  # an empty dict: any snapshot is refused the same way, before listening
    assert main(["view", str(snapshot), "--no-browser", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "a memory snapshot alone is not a profile" in err and "Traceback" not in err

"""`kinetoscope view` end to end: a real process serving a dataset, signed in with a printed link or not."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from kinetoscope.cli import main

from ..conftest import PYTHON, python_env
from ..kineto_gen import TrainingSpec, write_dataset
from ..viewer.helpers import exchange, sign_in


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


def wait_ready(base: str, session: dict[str, str]) -> None:
    """Waits (at most a minute) until the dataset behind `base` is ready."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        request = urllib.request.Request(base + "api/progress", headers=session)
        with urllib.request.urlopen(request, timeout=30) as response:
            state = json.loads(response.read())
        assert state["error"] is None, state
        if state["ready"]:
            return
        time.sleep(0.1)
    raise AssertionError(f"{base}: not ready after a minute")


def status_of(url: str, headers: dict[str, str] | None = None) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2"])
def test_view_on_loopback_requires_a_printed_link_too(tmp_path: Path, host: str) -> None:
    """Any local user or any web page can reach a loopback port: only a printed link opens the API."""
    dataset = write_dataset(tmp_path / "ds", TrainingSpec(ranks=1, steps=1, layers=2))
    proc, url = serve(dataset, "--host", host)
    try:
        assert url.startswith(f"http://{host}:") and "?code=" in url and "token" not in url
        assert len(url.split("?code=")[1]) >= 24
        base, session = sign_in(url)
        wait_ready(base, session)
        assert status_of(base + "api/meta") == 401
        assert status_of(base + "api/sql.csv?q=SELECT%201") == 401
        assert status_of(url) == 200
        request = urllib.request.Request(base + "api/meta", headers=session)
        with urllib.request.urlopen(request, timeout=30) as response:
            assert json.loads(response.read())["event_count"] > 0
        assert exchange(base, url.split("?code=")[1])[0] == 401  # the printed link worked once
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_view_on_another_address_requires_a_printed_link(tmp_path: Path) -> None:
    dataset = write_dataset(tmp_path / "ds", TrainingSpec(ranks=1, steps=1, layers=2))
    proc, url = serve(dataset, "--host", "0.0.0.0")
    try:
        base, session = sign_in(url)
        wait_ready(base, session)
        assert status_of(base + "api/meta") == 401
        assert status_of(base + "api/meta", session) == 200
    finally:
        proc.terminate()
        proc.wait(timeout=20)


FAKE_BROWSER = """#!/bin/sh
printf '%s\\n' "$0" "$@" > "{record}.tmp" && mv "{record}.tmp" "{record}"
"""


def test_the_browser_gets_no_code_in_its_arguments(tmp_path: Path) -> None:
    """Every local user can read /proc/*/cmdline: the browser is given a private launch page, whose
    link works once."""
    dataset = write_dataset(tmp_path / "ds", TrainingSpec(ranks=1, steps=1, layers=2))
    record, browser = tmp_path / "argv.txt", tmp_path / "browser.sh"
    browser.write_text(FAKE_BROWSER.format(record=record))
    browser.chmod(0o755)
    env = python_env() | {"BROWSER": str(browser), "XDG_RUNTIME_DIR": str(tmp_path / "run"), "DISPLAY": ""}
    proc = subprocess.Popen([PYTHON, "-m", "kinetoscope", "view", str(dataset), "--port", "0"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert proc.stdout is not None
        printed = next(word for line in proc.stdout for word in line.split() if word.startswith("http://"))
        deadline = time.monotonic() + 30
        while not record.exists():
            assert time.monotonic() < deadline and proc.poll() is None, "the browser was not started"
            time.sleep(0.05)
        argv = record.read_text().splitlines()
        page = Path(urllib.parse.urlsplit(argv[-1]).path)
        assert argv[0] == str(browser) and argv[-1].startswith("file://")
        assert page.parent == tmp_path / "run" / "kinetoscope"
        assert page.parent.stat().st_mode & 0o777 == 0o700 and page.stat().st_mode & 0o777 == 0o600
        opened = re.search(r'url=([^"]+)"', page.read_text()).group(1).replace("&amp;", "&")  # type: ignore[union-attr]
        code = opened.split("?code=")[1]
        assert code != printed.split("?code=")[1]  # each link its own code
        for secret in (code, printed.split("?code=")[1]):
            assert not any(secret in arg for arg in argv)
            assert secret not in Path(f"/proc/{proc.pid}/cmdline").read_text()
        base, session = sign_in(opened)  # what the browser does: its code works once
        assert not page.exists()  # the launch page goes once used
        assert exchange(base, code)[0] == 401
        wait_ready(base, session)
        assert status_of(base + "api/meta", session) == 200
        assert not any(secret in arg for arg in argv for secret in session.values())
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_view_of_a_missing_path_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["view", str(tmp_path / "nope"), "--no-browser"]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_view_at_a_time_opens_the_timeline_there_with_the_event_selected(tmp_path: Path) -> None:
    # GIVEN a dataset, WHEN view is asked for a place (as a finding's evidence says it, ms from the start)
    dataset = write_dataset(tmp_path / "ds", TrainingSpec(ranks=1, steps=1, layers=2))
    proc, url = serve(dataset, "--at", "2.336-11.501", "--event", "42")
    try:
        # THEN the URL it prints and opens is the viewer's deep link to that place, in ns, after the code
        assert url.endswith("&page=timeline&start=2336000&end=11501000&sel=42") and "?code=" in url
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_view_at_reads_milliseconds_and_refuses_what_is_not_a_range(capsys: pytest.CaptureFixture[str]) -> None:
    from kinetoscope.cli.view import place_query, time_range

    assert time_range("12.5") == (11_500_000, 13_500_000)  # a lone time: 1 ms either side
    assert time_range("0.2ms") == (0, 1_200_000)
    assert place_query(None, None) == "" and place_query(None, 7) == "page=timeline&sel=7"
    with pytest.raises(SystemExit) as exited:
        main(["view", "x", "--at", "5-2", "--no-browser"])
    assert exited.value.code == 2
    assert "START <= END" in capsys.readouterr().err


# ``python -m kinetoscope`` with Ctrl+C raising KeyboardInterrupt, as a shell in a terminal starts it: a
# test run started in the background (``cmd &`` in a script) hands its children SIGINT ignored, and the
# server, which stops on SIGINT either way, then cannot re-raise it and ends with 0.
CTRL_C_AS_FROM_A_TERMINAL = (
    "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "sys.argv[0] = 'kinetoscope'; runpy.run_module('kinetoscope', run_name='__main__', alter_sys=True)"
)


@pytest.mark.slow
@pytest.mark.serial
def test_ctrl_c_just_after_index_ready_stops_cleanly(tmp_path: Path) -> None:
    """Ctrl+C while the dataset's helper threads still run in DuckDB (just after "index ready"):
    before, the native teardown aborted the process (SIGABRT) in about 1 run in 3 here."""
    dataset = write_dataset(tmp_path / "ds", TrainingSpec(ranks=1, steps=1, layers=2))
    statuses = []
    for _ in range(8):
        command = [PYTHON, "-c", CTRL_C_AS_FROM_A_TERMINAL, "view", str(dataset), "--no-browser", "--port", "0"]
        proc = subprocess.Popen(command, env=python_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
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


def test_view_of_a_memory_snapshot_says_it_needs_a_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = tmp_path / "memory.pickle"
    snapshot.write_bytes(b"\x80\x04}\x94.")  # an empty dict: any snapshot is refused the same way, before listening
    assert main(["view", str(snapshot), "--no-browser", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "a memory snapshot alone is not a profile" in err and "Traceback" not in err

"""The command line's own process starts numpy's OpenBLAS with one thread for commands that only read
profiles (its threads spin at import for CPU time no analysis uses), and leaves commands that run the
user's code, and a value the user set, as they are."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from kinetoscope import cli

VARIABLE = "OPENBLAS_NUM_THREADS"


@pytest.fixture
def before_numpy(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """This process as it is before numpy is imported, with no BLAS setting of the user's."""
    monkeypatch.delitem(sys.modules, "numpy", raising=False)
    monkeypatch.delenv(VARIABLE, raising=False)
    return monkeypatch


@pytest.mark.parametrize("command", ["summary", "findings", "ingest", "import", "view", "sql", "mcp"])
def test_a_command_that_reads_profiles_asks_one_thread(before_numpy: pytest.MonkeyPatch, command: str) -> None:
    cli.one_blas_thread(command)
    assert os.environ[VARIABLE] == "1"


@pytest.mark.parametrize("command", [*sorted(cli.USER_CODE_COMMANDS), None])
def test_user_code_and_no_command_keep_the_environment(before_numpy: pytest.MonkeyPatch, command: str | None) -> None:
    cli.one_blas_thread(command)
    assert VARIABLE not in os.environ


def test_a_users_setting_is_kept(before_numpy: pytest.MonkeyPatch) -> None:
    before_numpy.setenv(VARIABLE, "8")
    cli.one_blas_thread("summary")
    assert os.environ[VARIABLE] == "8"


def test_too_late_once_numpy_is_loaded(monkeypatch: pytest.MonkeyPatch) -> None:
    import numpy  # noqa: F401 - loaded: its threads are started already

    monkeypatch.delenv(VARIABLE, raising=False)
    cli.one_blas_thread("summary")
    assert VARIABLE not in os.environ


def test_the_command_lines_process_gets_it() -> None:
    """The command line's own process (``sql --help``) has the setting by its end."""
    code = (
        "import atexit, os, sys; from kinetoscope import cli; sys.argv = ['kinetoscope', 'sql', '--help']\n"
        "atexit.register(lambda: print('BLAS', os.environ.get('OPENBLAS_NUM_THREADS')))\n"
        "cli.command_line()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != VARIABLE}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip().splitlines()[-1] == "BLAS 1"

"""The command line's environment variables (the analyses' settings, the gzip limits), read at its edge."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kinetoscope._errors import CommandError
from kinetoscope.cli import main
from kinetoscope.cli.environment import CATEGORIES_ENV, DEVICE_ENV, gzip_limits, user_options
from kinetoscope.format.kineto.trace_source import MAX_BYTES_ENV, MAX_RATIO_ENV, GzipLimits

from ..conftest import PYTHON, python_env
from ..format.kineto.test_trace_source import write_bomb


def test_no_settings_import_no_analyses() -> None:
    """A summary's dataset read starts before the analyses are imported: reading no settings
    must not import them."""
    code = (
        "import sys; from kinetoscope.cli.environment import user_options; assert user_options() is None; "
        "print(sorted(m for m in sys.modules if m.startswith('kinetoscope.analysis')))"
    )
    env = {k: v for k, v in python_env().items() if k not in (CATEGORIES_ENV, DEVICE_ENV)}
    done = subprocess.run([PYTHON, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_an_option_wins_over_its_variable_and_a_bad_one_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(DEVICE_ENV, "H100 SXM")
    found = user_options()
    assert found is not None and found.device is not None and found.device.name == "H100 SXM"
    given = user_options(device="MI300X")
    assert given is not None and given.device is not None and given.device.name == "MI300X"
    monkeypatch.setenv(CATEGORIES_ENV, str(tmp_path / "missing.toml"))
    with pytest.raises(CommandError, match=r"missing\.toml"):
        user_options()


def test_the_gzip_limits_are_read_here_and_reach_the_readers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a trace that expands to 4 MiB, under the default bound
    bomb = write_bomb(tmp_path / "bomb.json.gz", 4 << 20)
    assert gzip_limits() == GzipLimits()
    # WHEN the command line's variable lowers the bound below it
    monkeypatch.setenv(MAX_BYTES_ENV, str(1 << 20))
    assert gzip_limits() == GzipLimits(max_bytes=1 << 20)
    # THEN the import refuses it, naming the setting
    assert main(["import", str(bomb), "--out", str(tmp_path / "out")]) == 1
    assert "decompresses to more than 1,048,576 bytes" in capsys.readouterr().out


def test_a_bad_gzip_limit_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(MAX_RATIO_ENV, "lots")
    with pytest.raises(CommandError, match=MAX_RATIO_ENV):
        gzip_limits()
    assert main(["import", str(write_bomb(tmp_path / "t.json.gz", 0)), "--out", str(tmp_path / "out")]) == 2
    assert f"{MAX_RATIO_ENV}='lots'" in capsys.readouterr().err

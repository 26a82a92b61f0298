"""The command line's environment variables for the analyses' settings, read at its edge."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kinetoscope._errors import CommandError
from kinetoscope.cli.environment import CATEGORIES_ENV, DEVICE_ENV, user_options

from ..conftest import PYTHON, python_env


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

"""``kinetoscope verify``'s own part: the user's communication patterns reach the scan, and the
analyses are imported only where a category file is named."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kinetoscope.cli import verify as verify_command
from kinetoscope.cli.environment import CATEGORIES_ENV as ENV_VAR
from kinetoscope.cli.environment import from_environment

from ..conftest import PYTHON, python_env


def test_the_patterns_come_from_the_named_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "categories.json"
    path.write_text(json.dumps({"communication": ["^my_ep::"], "GEMM": ["mine"]}))
    monkeypatch.setenv(ENV_VAR, str(path))
    with from_environment():  # as the command line runs every command
        assert verify_command.user_patterns() == ("^my_ep::",)
    monkeypatch.delenv(ENV_VAR)
    with from_environment():
        assert verify_command.user_patterns() == ()


def test_without_a_category_file_verify_does_not_import_the_analyses() -> None:
    code = ("import sys; from kinetoscope.cli import verify; verify.user_patterns(); "
            "print(any(m.startswith('kinetoscope.analysis') for m in sys.modules))")
    done = subprocess.run([PYTHON, "-c", code], env=python_env(), capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"

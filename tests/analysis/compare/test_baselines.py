"""Where baselines live, and what a name may be."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinetoscope.analysis.compare import baselines
from kinetoscope.cli.environment import BASELINES_ENV, baselines_dir


def test_the_folder_is_given_else_beside_the_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = tmp_path / "project"
    inner = project / "src" / "pkg"
    inner.mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    monkeypatch.setenv(BASELINES_ENV, str(tmp_path / "env"))  # read by the command line, not here
    # the project around the current directory: its root, not the directory itself
    assert baselines.folder(None, cwd=inner) == project.resolve() / ".kinetoscope" / "baselines"
    # no project above: the current directory
    assert baselines.folder(None, cwd=tmp_path) == tmp_path.resolve() / ".kinetoscope" / "baselines"
    assert baselines.folder(baselines_dir(None), cwd=inner) == tmp_path / "env"  # the command line's edge
    assert baselines.folder(tmp_path / "given", cwd=inner) == tmp_path / "given"


def test_a_name_that_could_leave_the_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(baselines.BaselineError, match="a baseline name is"):
        baselines.path_of("../escape", tmp_path)
    assert baselines.path_of("main-2026.12", tmp_path) == tmp_path / "main-2026.12.json"

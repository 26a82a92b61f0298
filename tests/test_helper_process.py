"""Helper processes kinetoscope starts for itself never import from the working directory: a
profile tree someone sent may hold ``json.py``, ``duckdb.py`` or ``concurrent.py``, and
``cd tree && kinetoscope summary .`` must not run them (nor the viewer's first SQL query, nor the
capture's sampler started inside such a folder)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kinetoscope import _helper_process as helper

from .conftest import PYTHON, REPO, python_env
from .kineto_gen import TrainingSpec, write_profile

KINETOSCOPE = Path(sys.executable).parent / "kinetoscope"  # the console script, as a user runs it
PLANTED = ("json", "duckdb", "concurrent", "select", "pyarrow", "numpy")


def plant(folder: Path, markers: Path) -> None:
    """Modules named like those the helpers import; each leaves a marker file when it runs."""
    markers.mkdir(exist_ok=True)
    for name in PLANTED:
        (folder / f"{name}.py").write_text(f"open({str(markers / name)!r}, 'w').write('ran')\n")


def ran(markers: Path) -> list[str]:
    return sorted(path.name for path in markers.iterdir())


@pytest.fixture
def hostile_tree(tmp_path: Path) -> tuple[Path, Path]:
    tree = tmp_path / "received"
    write_profile(tree, TrainingSpec(ranks=2, steps=2, layers=2, problems=False))
    plant(tree, tmp_path / "markers")
    return tree, tmp_path / "markers"


def kinetoscope(tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    if not KINETOSCOPE.exists():
        pytest.skip(f"no console script at {KINETOSCOPE}")
    return subprocess.run([str(KINETOSCOPE), *args], cwd=tree, env=python_env(), capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip


@pytest.mark.slow
def test_ingest_workers_and_rank_workers_import_nothing_from_the_tree(hostile_tree: tuple[Path, Path]) -> None:
    # GIVEN a received two-rank profile tree holding json.py, concurrent.py, ... ; the user cds into it
    tree, markers = hostile_tree
    # WHEN ingest runs with worker processes, and summary with rank workers
    ingested = kinetoscope(tree, "ingest", ".", "--jobs", "2")
    summary = kinetoscope(tree, "summary", ".", "--workers", "2", "--json")
    # THEN both work and none of the planted modules ran
    assert ingested.returncode == 0, ingested.stderr
    assert summary.returncode == 0, summary.stderr
    assert ran(markers) == []


def run_in(tree: Path, code: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a Python started as the console script starts (no working directory on its path)."""
    return subprocess.run([PYTHON, "-P", "-c", textwrap.dedent(code)], cwd=tree, env=python_env(),
                          capture_output=True, text=True, timeout=120, check=False)  # fmt: skip


def test_the_viewers_sql_worker_imports_nothing_from_the_working_directory(hostile_tree: tuple[Path, Path]) -> None:
    tree, markers = hostile_tree
    assert kinetoscope(tree, "ingest", ".").returncode == 0
    done = run_in(tree, """
        from pathlib import Path
        from kinetoscope.report.opening import open_dataset
        from kinetoscope.viewer.querying.sql import SqlRunner
        from kinetoscope.report.opening import open_dataset
        from kinetoscope.viewer.querying.sql import SqlRunner
        with open_dataset(Path(".kinetoscope/dataset")) as dataset:
            runner = SqlRunner(dataset)
            print(runner.run("SELECT count(*) AS n FROM events").rows)
            runner.close()
    """)
    assert done.returncode == 0, done.stderr
    assert ran(markers) == []


def test_the_capture_sampler_imports_nothing_from_the_working_directory(tmp_path: Path) -> None:
    plant(tmp_path, tmp_path / "markers")
    done = run_in(tmp_path, """
        import os
        from kinetoscope.capture.system.sampler_process import SamplerProcess
        sampler = SamplerProcess()
        sampler.start(os.getpid(), 10, [])
        sampler.stop()
        sampler.close()
    """)
    assert done.returncode == 0, done.stderr
    assert ran(tmp_path / "markers") == []


def test_a_helpers_import_path_is_kinetoscope_then_the_users_absolute_entries() -> None:
    path = helper.import_path(os.pathsep.join(["/opt/lib", ".", "", "rel/dir", "/opt/lib", "/other"]))
    assert path.split(os.pathsep) == [helper.PACKAGE_ROOT, "/opt/lib", "/other"]
    env = helper.environment({"PYTHONPATH": ".", "HOME": "/h"})
    assert env["PYTHONSAFEPATH"] == "1" and env["PYTHONPATH"] == helper.PACKAGE_ROOT and env["HOME"] == "/h"
    assert helper.module_command("m", "a")[1:] == ["-P", "-m", "m", "a"]


def test_spawning_leaves_the_working_directory_out_and_restores_everything(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYTHONSAFEPATH", raising=False)
    monkeypatch.setenv("PYTHONPATH", "relative")
    monkeypatch.setattr(sys, "path", ["", os.getcwd(), str(REPO / "src"), *sys.path])
    before = list(sys.path)
    with helper.spawning():
        assert "" not in sys.path and os.getcwd() not in sys.path
        assert os.environ["PYTHONSAFEPATH"] == "1" and os.environ["PYTHONPATH"] == helper.PACKAGE_ROOT
    assert sys.path == before and "PYTHONSAFEPATH" not in os.environ and os.environ["PYTHONPATH"] == "relative"


def test_every_python_kinetoscope_starts_is_started_as_a_helper() -> None:
    # A new `sys.executable` command elsewhere would bypass -P and the safe import path.
    src = REPO / "src" / "kinetoscope"
    users = sorted(str(p.relative_to(src)) for p in src.rglob("*.py") if "sys.executable" in p.read_text())
    assert users == ["_helper_process.py"]

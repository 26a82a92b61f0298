"""Ingest as a transaction: killed (SIGKILL, SIGINT) at many points, or run twice at once, the
dataset afterwards (after the next ingest) equals a clean ingest, table by table."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pytest

from kinetoscope.dataset.schema import TABLES
from kinetoscope.dataset.transaction import JOURNAL
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from ..conftest import PYTHON, python_env
from ..kineto_gen import TrainingSpec, write_profile

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four ranks of a generated training step: big enough that an ingest takes a few seconds."""
    root = tmp_path_factory.mktemp("tx") / "train"
    write_profile(root, TrainingSpec(run="train", ranks=4, steps=6, layers=120, problems=False))
    return root


@pytest.fixture(scope="module")
def clean(profile: Path) -> dict[str, pa.Table]:
    out = profile.parent / "clean"
    assert ingest(IngestOptions(profile_dir=profile, out=out, jobs=1)).status == "ok"
    return tables_of(out)


def tables_of(dataset: Path) -> dict[str, pa.Table]:
    """Every table, rows in a fixed order (parts may be read in any order)."""
    with open_dataset(dataset) as opened:
        return {t.name: opened.sql(f'SELECT * FROM "{t.name}" ORDER BY ALL') for t in TABLES}


def start_ingest(profile: Path, out: Path, *extra: str) -> subprocess.Popen[str]:
    command = [PYTHON, "-m", "kinetoscope", "ingest", str(profile), "--out", str(out), "--jobs", "1", *extra]
    return subprocess.Popen(command, env=python_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def interrupted(profile: Path, out: Path, delay_s: float, how: signal.Signals, *extra: str) -> None:
    """An ingest stopped by ``how`` ``delay_s`` after it started (or left to finish if it is quicker)."""
    process = start_ingest(profile, out, *extra)
    time.sleep(delay_s)
    process.send_signal(how)
    process.communicate(timeout=120)


def assert_equal(got: dict[str, pa.Table], want: dict[str, pa.Table]) -> None:
    for name, table in want.items():
        assert got[name].num_rows == table.num_rows, name
        assert got[name].equals(table), name


@pytest.mark.parametrize("delay_s", [0.8, 1.6, 2.4, 3.2, 4.0, 5.0])
@pytest.mark.parametrize("force", [False, True], ids=["first-ingest", "force-reingest"])
def test_a_killed_ingest_is_repaired_by_the_next_one(
    profile: Path, clean: dict[str, pa.Table], tmp_path: Path, delay_s: float, force: bool
) -> None:
    # GIVEN no dataset yet, or a complete one being ingested again with --force; the ingest is SIGKILLed
    out = tmp_path / "ds"
    if force:
        shutil.copytree(profile.parent / "clean", out)
    interrupted(profile, out, delay_s, signal.SIGKILL, *(["--force"] if force else []))
    # WHEN ingest runs again (no --force: it must itself find what the killed one left half done)
    rerun = subprocess.run([PYTHON, "-m", "kinetoscope", "ingest", str(profile), "--out", str(out)],
                           env=python_env(), capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
    assert rerun.returncode == 0, rerun.stderr
    # THEN the dataset equals a clean ingest, and nothing of the killed run is left
    assert not (out / JOURNAL).exists()
    assert not [p for p in out.rglob("*") if p.name.endswith((".tmp", ".spool"))]
    assert_equal(tables_of(out), clean)


@pytest.mark.parametrize("delay_s", [1.0, 2.5])
def test_an_interrupted_ingest_is_repaired_too(
    profile: Path, clean: dict[str, pa.Table], tmp_path: Path, delay_s: float
) -> None:
    out = tmp_path / "ds"
    interrupted(profile, out, delay_s, signal.SIGINT)
    assert ingest(IngestOptions(profile_dir=profile, out=out, jobs=1)).status == "ok"
    assert_equal(tables_of(out), clean)


def test_two_ingests_at_once_wait_for_each_other(profile: Path, clean: dict[str, pa.Table], tmp_path: Path) -> None:
    # GIVEN two ingests of one profile into one new dataset, started together
    out = tmp_path / "ds"
    first, second = start_ingest(profile, out), start_ingest(profile, out)
    (_, err_first), (_, err_second) = first.communicate(timeout=300), second.communicate(timeout=300)
    # THEN both succeed, one said it waited for the other, and the dataset equals a clean ingest
    assert first.returncode == second.returncode == 0, (err_first, err_second)
    assert "waiting for the ingest that is writing" in err_first + err_second
    assert_equal(tables_of(out), clean)

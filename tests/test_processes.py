"""Scratch folders of processes that were killed are removed by the next one."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

import pytest

from kinetoscope._processes import remove_dead_scratch, scratch_folder
from kinetoscope.ingest.running.pipeline import INGEST_SCRATCH_PREFIX, IngestOptions, ingest

from .ingest.helpers import kernel, write_session, x


def _dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


@pytest.fixture
def temp_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def test_a_killed_ingests_scratch_folder_is_removed_by_the_next(tmp_path: Path, temp_root: Path) -> None:
    # GIVEN the empty scratch folder of an ingest that was killed (SIGKILL: its cleanup never ran)
    left = temp_root / f"{INGEST_SCRATCH_PREFIX}{_dead_pid()}-abc123"
    (left / "dataset").mkdir(parents=True)
    write_session(tmp_path / "prof", [x("aten::mm", 0, 10), kernel("gemm", 4, 8, correlation=5)])
    # WHEN the next ingest runs
    ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds"))
    # THEN no scratch folder is left, its own included
    assert list(temp_root.iterdir()) == []


def test_live_processes_and_other_files_are_left_alone(temp_root: Path) -> None:
    mine = temp_root / f"x-{os.getpid()}-live"
    mine.mkdir()
    other = temp_root / "x-notapid"
    other.mkdir()
    target = temp_root / "target"
    target.mkdir()
    link = temp_root / f"x-{_dead_pid()}-link"
    link.symlink_to(target)
    assert remove_dead_scratch("x-") == []
    assert sorted(p.name for p in temp_root.iterdir()) == sorted([mine.name, other.name, "target", link.name])


def test_the_scratch_folder_goes_on_an_error(temp_root: Path) -> None:
    with pytest.raises(RuntimeError), scratch_folder("y-") as folder:
        (folder / "f").write_text("x")
        raise RuntimeError
    assert list(temp_root.iterdir()) == []

"""The viewer index is untrusted input in an untrusted place: each test plants what another
local user (or whoever sent the dataset) could plant, then opens the viewer."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

import duckdb
import pytest

from kinetoscope.format.private_dirs import UnsafeDirectoryError
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing import index as index_module
from kinetoscope.viewer.indexing.index import ViewerIndex, index_path

from ...kineto_gen import TrainingSpec, write_dataset


@pytest.fixture
def dataset(tmp_path: Path) -> Dataset:
    write_dataset(tmp_path / "ds", TrainingSpec(ranks=1, steps=1, layers=2))
    return Dataset(tmp_path / "ds")


@pytest.fixture
def read_only(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The dataset folder counts as not writable (tests may run as root); the cache is private."""
    real = os.access
    monkeypatch.setattr(index_module.os, "access",
                        lambda path, mode: False if Path(path).name == "_viewer" else real(path, mode))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "kinetoscope" / "viewer"


def _plant_table(index_file: Path, name: str) -> None:
    with duckdb.connect(str(index_file)) as con:
        con.execute(f'CREATE TABLE "{name.replace(chr(34), chr(34) * 2)}" AS SELECT 1 AS x')


def test_a_planted_table_name_runs_no_sql(dataset: Dataset, tmp_path: Path) -> None:
    ViewerIndex.open(dataset)
    written = tmp_path / "pwned.csv"
    _plant_table(index_path(dataset), f"a\" AS SELECT 1; COPY (SELECT 42) TO '{written}'; --")
    index = ViewerIndex.open(dataset)  # same fingerprint: the planted file is used as it is
    assert not written.exists()
    assert index.event_count > 0


def test_the_index_connection_reads_no_file_outside_the_dataset(dataset: Dataset, tmp_path: Path) -> None:
    (tmp_path / "secret.csv").write_text("a\n1\n")
    con = ViewerIndex.open(dataset).cursor()
    with pytest.raises(duckdb.Error, match="disabled"):
        con.execute(f"SELECT * FROM read_csv('{tmp_path / 'secret.csv'}')").fetchall()
    with pytest.raises(duckdb.Error, match="disabled"):
        con.execute(f"COPY (SELECT 1) TO '{tmp_path / 'out.csv'}'")
    with pytest.raises(duckdb.Error):
        con.execute("SET enable_external_access = true")
    assert con.execute("SELECT count(*) FROM events").fetchone() is not None


def test_a_read_only_dataset_indexes_into_a_private_cache_not_tmp(dataset: Dataset, read_only: Path) -> None:
    digest = hashlib.sha256(str(dataset.path).encode()).hexdigest()[:16]
    old_place = Path(tempfile.gettempdir()) / f"kinetoscope-viewer-{digest}"
    old_place.mkdir(exist_ok=True)
    try:
        ViewerIndex.open(dataset)
        assert not any(old_place.iterdir())
    finally:
        shutil.rmtree(old_place)
    assert index_path(dataset).parent.parent == read_only
    assert (read_only.stat().st_mode & 0o777) == 0o700


@pytest.mark.parametrize("plant", ["shared", "foreign", "link"])
def test_a_cache_folder_others_control_is_refused(dataset: Dataset, read_only: Path, tmp_path: Path,
                                                  plant: str) -> None:
    read_only.parent.mkdir(parents=True)
    if plant == "link":
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        read_only.symlink_to(tmp_path / "elsewhere")
    else:
        read_only.mkdir(mode=0o700)
        os.chmod(read_only, 0o777 if plant == "shared" else 0o700)
        if plant == "foreign":
            if os.getuid() != 0:
                pytest.skip("only root can give a folder to another user")
            os.chown(read_only, 65534, 65534)
    with pytest.raises(UnsafeDirectoryError, match="not a private folder"):
        ViewerIndex.open(dataset)

"""A viewer index damaged after it was built (its fingerprint still matching the dataset) is built
again when the viewer opens it, instead of answering "Corrupt database file" (a 500) on the first
request that reaches the damaged block."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import INDEX_TABLES, ViewerIndex, index_path, stored_fingerprint
from kinetoscope.viewer.querying import queries

SEED = Path(__file__).resolve().parents[2] / "data" / "fuzz-seed"


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    session = layout.session_path(tmp_path / "profile", "host", 7, 1_764_000_000_000_000_000, 0)
    shutil.copytree(SEED, session)
    ingest(IngestOptions(profile_dir=tmp_path / "profile", out=tmp_path / "ds", jobs=1))
    ViewerIndex.open(Dataset(tmp_path / "ds")).close()
    return tmp_path / "ds"


def _read_everything(path: Path) -> None:
    """Every table of the index file read whole (DuckDB checks each block's checksum as it reads it)."""
    with duckdb.connect(str(path), read_only=True) as con:
        found = {row[0] for row in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        for table in sorted(found & set(INDEX_TABLES)):
            con.execute(f'SELECT * FROM "{table}"').fetchall()


def _damaged_but_claiming_this_dataset(path: Path) -> bytes:
    """The index with one block overwritten where DuckDB then reports it corrupt, while its meta table
    (the fingerprint) still reads."""
    built = path.read_bytes()
    for offset in range(256 << 10, len(built) - 4096, 16 << 10):
        damaged = bytearray(built)
        damaged[offset + 100 : offset + 4000] = b"\xaa" * 3900
        path.write_bytes(bytes(damaged))
        if stored_fingerprint(path) is None:
            continue
        try:
            _read_everything(path)
        except duckdb.Error as exc:
            assert "Corrupt database file" in str(exc)
            return bytes(damaged)
    raise AssertionError("no block of the index was found whose damage DuckDB reports")


def test_a_damaged_index_whose_fingerprint_still_matches_is_built_again(dataset: Path) -> None:
    path = index_path(Dataset(dataset))
    damaged = _damaged_but_claiming_this_dataset(path)
    index = ViewerIndex.open(Dataset(dataset))
    try:
        queries.meta(index)
        index.cursor().execute("SELECT count(*) FROM ev").fetchall()
    finally:
        index.close()
    assert path.read_bytes() != damaged
    _read_everything(path)


def test_an_intact_index_is_not_built_again(dataset: Path) -> None:
    path = index_path(Dataset(dataset))
    before = path.stat().st_mtime_ns
    ViewerIndex.open(Dataset(dataset)).close()
    assert path.stat().st_mtime_ns == before

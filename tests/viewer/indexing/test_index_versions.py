"""An index built by this version removes the index files earlier versions left beside it."""

from __future__ import annotations

from pathlib import Path

from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import INDEX_VERSION, ViewerIndex, index_path

from ...kineto_gen import TrainingSpec, write_dataset


def test_a_new_index_removes_older_versions_and_nothing_else(tmp_path: Path) -> None:
    # GIVEN a dataset whose _viewer folder holds an older version's index and clocks, a newer
    # version's index, and a file of the user's
    dataset = Dataset(write_dataset(tmp_path / "ds", TrainingSpec(ranks=1, steps=2, layers=2)))
    folder = index_path(dataset).parent
    older = [folder / f"index-v{INDEX_VERSION - 1}.duckdb", folder / f"index-v{INDEX_VERSION - 1}.clocks.json"]
    kept = [folder / f"index-v{INDEX_VERSION + 1}.duckdb", folder / "notes.txt"]
    for path in [*older, *kept]:
        path.write_bytes(b"stale")
    # WHEN this version builds its index
    ViewerIndex.open(dataset).close()
    # THEN the older files are gone, the others stay, and this version's index is there
    assert [path.exists() for path in older] == [False, False]
    assert [path.exists() for path in kept] == [True, True]
    assert index_path(dataset).is_file()


def test_older_versions_go_even_when_this_versions_index_is_current(tmp_path: Path) -> None:
    dataset = Dataset(write_dataset(tmp_path / "ds", TrainingSpec(ranks=1, steps=2, layers=2)))
    ViewerIndex.open(dataset).close()  # this version's index exists: the next open builds nothing
    older = index_path(dataset).parent / f"index-v{INDEX_VERSION - 1}.duckdb"
    older.write_bytes(b"left by an earlier kinetoscope")
    built = index_path(dataset).stat().st_mtime_ns
    ViewerIndex.open(dataset).close()
    assert not older.exists() and index_path(dataset).stat().st_mtime_ns == built

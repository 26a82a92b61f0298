"""Readers of a dataset whose ingest was interrupted (its journal left behind) refuse it, saying how
to repair it, instead of reporting the sessions it was rewriting as absent; while an ingest is
writing it, they say so."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinetoscope import FormatError
from kinetoscope.cli import main
from kinetoscope.dataset import directory, transaction
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from ..ingest.helpers import annotated_step, write_session


def _interrupted(root: Path) -> Path:
    """A 2-rank dataset as an ``ingest --force`` killed after removing rank 1's parts leaves it."""
    for rank in range(2):
        write_session(root / "prof", annotated_step(), rank=rank, pid=4000 + rank, world_size=2)
    dataset = root / "ds"
    ingest(IngestOptions(profile_dir=root / "prof", out=dataset, jobs=1))
    manifest = directory.load_manifest(dataset)
    keys = sorted(manifest.sessions)
    transaction.begin(dataset, keys)
    for part in manifest.sessions[keys[1]].parts:
        (dataset / part).unlink()
    return dataset


def test_sql_and_summary_refuse_a_dataset_whose_ingest_was_interrupted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dataset = _interrupted(tmp_path)
    assert main(["sql", str(dataset), "SELECT count(*) AS n FROM events"]) == 2
    assert main(["summary", str(dataset)]) == 2
    err = capsys.readouterr().err
    assert err.count("the last ingest into this dataset was interrupted") == 2
    assert "run `kinetoscope ingest` again" in err and "Traceback" not in err


def test_the_next_ingest_repairs_it_and_readers_read_it_again(tmp_path: Path) -> None:
    dataset = _interrupted(tmp_path)
    with pytest.raises(FormatError, match="interrupted"):
        open_dataset(dataset)
    ingest(IngestOptions(profile_dir=tmp_path / "prof", out=dataset, jobs=1))
    with open_dataset(dataset) as repaired:
        assert repaired.sql("SELECT count(DISTINCT rank) AS n FROM events").to_pylist() == [{"n": 2}]


def test_a_dataset_an_ingest_is_writing_now_is_refused_as_busy(tmp_path: Path) -> None:
    dataset = _interrupted(tmp_path)
    with transaction.writer_lock(dataset), pytest.raises(FormatError, match="an ingest is writing this dataset now"):
        open_dataset(dataset)

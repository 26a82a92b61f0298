"""A profile tree's default dataset is a cache: written by another schema version, it is ingested
again; a dataset the user named is refused with what to do."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kinetoscope import FormatError
from kinetoscope.cli import main
from kinetoscope.dataset.schema import SCHEMA_VERSION
from kinetoscope.ingest import IngestOptions, default_dataset_path, ingest
from kinetoscope.report.opening import open_dataset

from ...conftest import REPO


def as_older_schema(dataset: Path) -> None:
    manifest = dataset / "_dataset.json"
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "schema_version": SCHEMA_VERSION - 1}))


@pytest.fixture
def profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    shutil.copytree(REPO / "tests" / "data" / "import-cpu-gloo", tmp_path / "trace")
    assert main(["import", str(tmp_path / "trace"), "--out", str(tmp_path / "prof")]) == 0
    capsys.readouterr()
    return tmp_path / "prof"


def test_an_outdated_default_dataset_is_ingested_again(profile: Path) -> None:
    with open_dataset(profile) as first:
        events = first.table("events").num_rows
    as_older_schema(default_dataset_path(profile))
    with open_dataset(profile) as again:
        assert again.table("events").num_rows == events > 0
    assert json.loads((default_dataset_path(profile) / "_dataset.json").read_text())["schema_version"] == SCHEMA_VERSION


def test_an_outdated_named_dataset_is_refused(profile: Path, tmp_path: Path) -> None:
    assert ingest(IngestOptions(profile_dir=profile, out=tmp_path / "mine")).status == "ok"
    as_older_schema(tmp_path / "mine")
    with pytest.raises(FormatError, match="ingest again into a new directory"):
        ingest(IngestOptions(profile_dir=profile, out=tmp_path / "mine"))

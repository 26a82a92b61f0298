"""Ingest from and into a location given as a URL (here ``file://``, which takes the object-store path
without a server): the same dataset as a local ingest, incremental, and paths from a manifest checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinetoscope._errors import FormatError
from kinetoscope.cli.locations import location
from kinetoscope.dataset.schema import TABLES
from kinetoscope.dataset.storage import open_location, safe_relative
from kinetoscope.dataset.target import RemoteDataset
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from .helpers import HOST_PID, kernel, write_session, x


def rows(dataset: Any, table: str) -> list[str]:
    names = [c for c in dataset.table(table).column_names if (table, c) != ("sessions", "path")]
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in dataset.table(table, names).to_pylist())


def tree(root: Path, ranks: int = 2) -> Path:
    events = [x("aten::mm", 10, 40, **{"External id": 1}), kernel("gemm", 30, 60, correlation=1)]
    for rank in range(ranks):
        write_session(root, events, rank=rank, pid=HOST_PID + rank, world_size=ranks)
    return root


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_url_tree_into_a_url_dataset_equals_a_local_ingest(tmp_path: Path, jobs: int) -> None:
    # GIVEN a 2-rank tree, ingested locally and, by URL, into a dataset named by URL
    profile = tree(tmp_path / "prof")
    ingest(IngestOptions(profile_dir=profile, out=tmp_path / "local", jobs=1))
    url, out = f"file://{profile}", f"file://{tmp_path / 'remote'}"
    report = ingest(IngestOptions(profile_dir=url, out=out, run="prof", jobs=jobs))
    # THEN every table holds the same rows, and sessions say where they were read from
    assert report.status == "ok" and report.dataset == out
    with open_dataset(tmp_path / "local") as local, open_dataset(out) as remote:
        for table in TABLES:
            assert rows(remote, table.name) == rows(local, table.name), table.name
        assert remote.sql("SELECT count(*) AS n FROM events").to_pylist() == [{"n": 4}]
        paths = remote.table("sessions", ["path"]).column("path").to_pylist()
    assert len(paths) == 2 and all(p.startswith(url + "/") for p in paths)
    # AND ingesting again re-reads nothing
    again = ingest(IngestOptions(profile_dir=url, out=out, run="prof", jobs=jobs))
    assert again.outcomes == [] and len(again.skipped) == 2


def test_a_url_tree_without_sessions_says_so(tmp_path: Path) -> None:
    (tmp_path / "empty" / "x").mkdir(parents=True)
    (tmp_path / "empty" / "x" / "notes.txt").write_text("no sessions here")
    with pytest.raises(Exception, match="no session directories found"):
        ingest(IngestOptions(profile_dir=f"file://{tmp_path / 'empty'}", out=f"file://{tmp_path / 'ds'}"))


def test_parts_named_by_a_manifest_are_removed_only_inside_the_dataset(tmp_path: Path) -> None:
    # GIVEN a dataset by URL with one real part, and a file beside the dataset
    (tmp_path / "ds" / "events").mkdir(parents=True)
    (tmp_path / "ds" / "events" / "part-a.parquet").write_bytes(b"part")
    (tmp_path / "outside.parquet").write_bytes(b"not ours")
    target = RemoteDataset(open_location(f"file://{tmp_path / 'ds'}"), tmp_path / "scratch")
    # WHEN a manifest lists the part, a path out of the dataset, an absolute one and a non-part
    refused = target.remove_parts(["events/part-a.parquet", "../outside.parquet", "/etc/x.parquet", "_dataset.json"])
    # THEN only the part is gone, and each other path is refused by name
    assert not (tmp_path / "ds" / "events" / "part-a.parquet").exists()
    assert (tmp_path / "outside.parquet").exists()
    assert len(refused) == 3 and all("refused to remove" in r for r in refused)


def test_relative_paths_and_command_line_locations() -> None:
    assert safe_relative("events/run=a/rank=0/p.parquet") == "events/run=a/rank=0/p.parquet"
    assert [safe_relative(p) for p in ("../x", "/x", "a/../../x", "", "a\\b")] == [None] * 5
    assert location("s3://bucket/prefix") == "s3://bucket/prefix"
    assert location("./profile") == Path("profile")


@pytest.mark.parametrize("manifest", ["{not json", '{"schema_version": 1, "runs": []}'])
def test_a_bad_stored_manifest_is_named_by_its_url(tmp_path: Path, manifest: str) -> None:
    # GIVEN a dataset on an object store whose manifest is damaged, or of another schema version
    remote = tmp_path / "remote"
    remote.mkdir()
    (remote / "_dataset.json").write_text(manifest)
    url = f"file://{remote}"
    # WHEN ingest or a reader opens it THEN the error names the manifest's URL, not a temporary copy
    with pytest.raises(FormatError) as ingesting:
        ingest(IngestOptions(profile_dir=tree(tmp_path / "prof", ranks=1), out=url))
    with pytest.raises(FormatError) as reading:
        open_dataset(url)
    for error in (ingesting.value, reading.value):
        assert str(error).startswith(f"{url}/_dataset.json: "), str(error)
        assert "kinetoscope-" not in str(error)

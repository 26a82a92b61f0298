"""A dataset whose Parquet parts were damaged, cut short or removed after ingest: every reader says
which part and how to repair it (never a pyarrow or DuckDB traceback), and the next ingest finds the
damage in the manifest's sizes and hashes and ingests that session again."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from kinetoscope.cli import main
from kinetoscope.dataset import directory
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.query.dataset import DamagedPartError
from kinetoscope.report.opening import open_dataset

from ..ingest.helpers import annotated_step, write_session


def _garble_middle(path: Path) -> None:
    """The middle third overwritten (page headers and compressed pages: reading fails)."""
    data = bytearray(path.read_bytes())
    third = len(data) // 3
    data[third : 2 * third] = b"\xff" * third
    path.write_bytes(bytes(data))


def _cut(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _zero_footer(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[:-12] + b"\0" * 12)


def _text(path: Path) -> None:
    path.write_text("not parquet at all\n")


def _remove(path: Path) -> None:
    path.unlink()


DAMAGE: dict[str, Callable[[Path], None]] = {
    "garbled": _garble_middle, "cut": _cut, "footer": _zero_footer, "text": _text, "removed": _remove,
}  # fmt: skip


def _ingested(root: Path, ranks: int = 2, jobs: int = 1) -> tuple[Path, Path]:
    for rank in range(ranks):
        write_session(root / "prof", annotated_step(), rank=rank, pid=4000 + rank, world_size=ranks)
    report = ingest(IngestOptions(profile_dir=root / "prof", out=root / "ds", jobs=jobs))
    assert report.status == "ok"
    return root / "prof", root / "ds"


def _events_part(dataset: Path, rank: int = 1) -> Path:
    parts = directory.table_files(dataset, "events")
    return next(p for p in parts if f"rank={rank}" in p.as_posix() and "empty" not in p.name)


@pytest.mark.parametrize("jobs", [1, 2], ids=["here", "in-workers"])
def test_the_manifest_records_each_parts_size_and_hash(jobs: int, tmp_path: Path) -> None:
    _, dataset = _ingested(tmp_path, jobs=jobs)
    manifest = directory.load_manifest(dataset)
    for record in manifest.sessions.values():
        assert set(record.part_checks) == set(record.parts)
        for part, check in record.part_checks.items():
            assert check == directory.part_check(dataset / part)
            assert check.split(":")[0] == str((dataset / part).stat().st_size)


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_readers_name_the_damaged_part(damage: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a dataset whose rank 1 events part was damaged after ingest
    profile, dataset = _ingested(tmp_path)
    part = _events_part(dataset)
    DAMAGE[damage](part)
    out = tmp_path / "merged.json"
    # WHEN the commands that read it run
    codes = [
        main(["summary", str(dataset)]),
        main(["findings", str(dataset)]),
        main(["export", str(dataset), "--format", "chrome", "-o", str(out)]),
        main(["diff", str(dataset), str(dataset)]),
        main(["sql", str(dataset), "SELECT count(*) AS n FROM events"]),
    ]
    captured = capsys.readouterr()
    # THEN each fails with the part named and the repair said, and no traceback
    assert codes == [2] * 5, captured.err
    assert "Traceback" not in captured.err + captured.out
    lines = captured.err.strip().splitlines()
    assert len(lines) == 5 and all(str(part) in line and "kinetoscope ingest --force" in line for line in lines)
    with pytest.raises(DamagedPartError, match=str(part)), open_dataset(dataset) as opened:
        opened.table("events")
    del profile


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_ingest_again_finds_the_damage_and_ingests_that_session_again(damage: str, tmp_path: Path) -> None:
    profile, dataset = _ingested(tmp_path)
    clean = shutil.copytree(dataset, tmp_path / "clean")
    part = _events_part(dataset)
    DAMAGE[damage](part)
    report = ingest(IngestOptions(profile_dir=profile, out=dataset, jobs=1))
    # THEN the damaged session is ingested again (not "unchanged"), the other is left alone
    assert [o.rank for o in report.outcomes] == [1] and len(report.skipped) == 1
    assert len(report.damaged) == 1 and str(part.relative_to(dataset)) in report.damaged[0]
    assert part.read_bytes() == (clean / part.relative_to(dataset)).read_bytes()
    with open_dataset(dataset) as repaired:
        assert repaired.sql("SELECT count(DISTINCT rank) AS n FROM events").to_pylist() == [{"n": 2}]


def test_an_sql_mistake_is_not_taken_for_damage(tmp_path: Path) -> None:
    _, dataset = _ingested(tmp_path)
    with open_dataset(dataset) as opened, pytest.raises(Exception) as caught:
        opened.sql("SELECT no_such_column FROM events")
    assert not isinstance(caught.value, DamagedPartError)
    with open_dataset(dataset) as opened, pytest.raises(Exception) as wrong_column:
        opened.table("events", ["no_such_column"])
    assert not isinstance(wrong_column.value, DamagedPartError)


@pytest.mark.parametrize("damage", ["cut", "removed"])
def test_the_same_on_a_dataset_given_by_url(damage: str, tmp_path: Path) -> None:
    # GIVEN a dataset written through the object-store path (file:// takes it without a server)
    for rank in range(2):
        write_session(tmp_path / "prof", annotated_step(), rank=rank, pid=4000 + rank, world_size=2)
    url = f"file://{tmp_path / 'remote'}"
    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=url, run="prof", jobs=1)).status == "ok"
    part = _events_part(tmp_path / "remote")
    DAMAGE[damage](part)
    # THEN reading it names the part, and ingesting again re-reads that session only
    with pytest.raises(DamagedPartError, match=part.name), open_dataset(url) as opened:
        opened.table("events")
        opened.sql("SELECT count(*) FROM events")
    report = ingest(IngestOptions(profile_dir=tmp_path / "prof", out=url, run="prof", jobs=1))
    assert [o.rank for o in report.outcomes] == [1] and len(report.damaged) == 1
    with open_dataset(url) as repaired:
        assert repaired.sql("SELECT count(DISTINCT rank) AS n FROM events").to_pylist() == [{"n": 2}]


def test_ingest_says_which_part_it_found_damaged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile, dataset = _ingested(tmp_path)
    part = _events_part(dataset)
    _cut(part)
    capsys.readouterr()
    assert main(["ingest", str(profile), "--out", str(dataset), "--jobs", "1"]) == 0
    out = capsys.readouterr().out
    assert f"warning: {part}: damaged" in out and "ingesting its session again" in out
    assert "1 session(s) ingested, 1 unchanged" in out

"""A crafted ``_ingest.journal`` deletes nothing outside the dataset: keys read from it are used
in file names only when they are session keys, and every removal goes through the one checked
remover (no glob built from file content, no link followed out of the dataset)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kinetoscope.dataset import directory
from kinetoscope.dataset.transaction import JOURNAL, interrupted
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from ..kineto_gen import TrainingSpec, write_profile

HOSTILE_KEYS = ["../../victims/x", "**", "*", "../*", "/etc", "0123456789abcdef/../../../victims/x", ""]


@pytest.fixture
def dataset(tmp_path: Path) -> tuple[Path, Path, int]:
    """A small two-rank profile ingested once; returns the profile, the dataset and its event count."""
    profile = tmp_path / "profile"
    write_profile(profile, TrainingSpec(ranks=2, steps=2, layers=2, problems=False))
    out = profile / ".kinetoscope" / "dataset"
    assert ingest(IngestOptions(profile_dir=profile, out=out, jobs=1)).status == "ok"
    return profile, out, _events(out)


def _events(dataset: Path) -> int:
    with open_dataset(dataset) as opened:
        return int(opened.sql("SELECT count(*) AS n FROM events").column("n")[0].as_py())


def _victims(root: Path) -> list[Path]:
    """Parquet files outside the dataset, with names any glob over part files would match."""
    folder = root / "victims"
    (folder / "deep").mkdir(parents=True)
    files = [folder / "x.parquet", folder / "part-x.parquet", folder / "deep" / "part-0123456789abcdef.parquet"]
    for path in files:
        path.write_bytes(b"PAR1 not really")
    return files


@pytest.mark.parametrize("key", HOSTILE_KEYS)
def test_a_hostile_journal_key_deletes_nothing_outside(dataset: tuple[Path, Path, int], key: str) -> None:
    # GIVEN a dataset whose journal (as if an ingest died) names a key that is not a session key
    profile, out, events = dataset
    victims = _victims(profile.parent)
    (out / JOURNAL).write_text(json.dumps({"sessions": [key]}))
    # WHEN the next ingest repairs it
    assert ingest(IngestOptions(profile_dir=profile, out=out, jobs=1)).status == "ok"
    # THEN nothing outside the dataset is gone; the journal counted as damaged, every session re-read
    assert all(path.exists() for path in victims)
    assert not (out / JOURNAL).exists()
    assert _events(out) == events


def test_a_linked_folder_in_the_dataset_is_not_followed(dataset: tuple[Path, Path, int]) -> None:
    # GIVEN links in the dataset and in a table's folder to a folder outside, holding a file named like a session's part
    profile, out, events = dataset
    key = next(iter(directory.load_manifest(out).sessions))
    outside = profile.parent / "elsewhere"
    outside.mkdir()
    (outside / f"part-{key}.parquet").write_bytes(b"PAR1")
    (outside / "x.tmp").write_bytes(b"tmp")
    (out / "linked").symlink_to(outside)
    (out / "events" / "linked").symlink_to(outside)
    (out / JOURNAL).write_text(json.dumps({"sessions": [key]}))
    # WHEN the next ingest repairs that session
    assert ingest(IngestOptions(profile_dir=profile, out=out, jobs=1)).status == "ok"
    # THEN the files behind the link are untouched
    assert (outside / f"part-{key}.parquet").exists() and (outside / "x.tmp").exists()
    assert _events(out) == events


def test_only_session_keys_come_back_from_a_journal(tmp_path: Path) -> None:
    good = "0123456789abcdef"
    for document, want in [
        ({"sessions": [good]}, [good]),
        ({"sessions": [good, "../x"]}, ["?"]),
        ({"sessions": ["ABCDEF0123456789"]}, ["?"]),
        ({"sessions": [1]}, ["?"]),
        ({"sessions": "x"}, ["?"]),
        ([good], ["?"]),
    ]:
        (tmp_path / JOURNAL).write_text(json.dumps(document))
        assert interrupted(tmp_path) == want, document
    (tmp_path / JOURNAL).write_text("[" * 100_000)
    assert interrupted(tmp_path) == ["?"]


def test_the_remover_refuses_links_and_paths_out(tmp_path: Path) -> None:
    root, outside = tmp_path / "ds", tmp_path / "outside.parquet"
    root.mkdir()
    outside.write_bytes(b"x")
    (root / "link.parquet").symlink_to(outside)
    (root / "mine.parquet").write_bytes(b"x")
    assert not directory.remove_inside(root, "link.parquet")
    assert not directory.remove_inside(root, "../outside.parquet")
    assert not directory.remove_inside(root, str(outside))
    assert directory.remove_inside(root, "mine.parquet") and directory.remove_inside(root, "gone.parquet")
    assert outside.exists() and (root / "link.parquet").is_symlink() and not (root / "mine.parquet").exists()

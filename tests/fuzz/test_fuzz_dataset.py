"""The fuzz suite, continued: snapshots damaged in their structure (fields of every wrong type, lists
shared into huge trees, loops), the dataset's own files (a Parquet part, ``_dataset.json``, the
viewer's index) damaged after ingest, and trees of several sessions with one bad file.

As in ``test_fuzz``: an input may be refused with kinetoscope's own error or read in part; any other
exception, over 10 s for one input or over 1 GiB peak RSS fails the test (0 untyped tracebacks).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from kinetoscope.dataset import directory
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files.snapshot import load_snapshot, summarize
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.query.dataset import Dataset

from .harness import run_series, untyped_message
from .mutate import mutate_snapshot
from .test_fuzz import SEED, _check, _ingested_events, _quiet_main, count

SNAPSHOT = "memory_snapshot_rank0.pickle"


def _session(profile: Path, rank: int) -> Path:
    session = layout.session_path(profile, "fuzz-host", 4242 + rank, 1_764_000_000_000_000_000, 0)
    shutil.copytree(SEED, session)
    return session


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The seed session ingested: its parts, manifest and viewer index seed the series below."""
    work = tmp_path_factory.mktemp("dataset")
    _session(work / "profile", 0)
    report = ingest(IngestOptions(profile_dir=work / "profile", out=work / "dataset", jobs=1))
    assert report.status in ("ok", "partial")
    return work / "dataset"


def _events_part(dataset: Path) -> Path:
    return next(p for p in directory.table_files(dataset, "events") if "empty" not in p.name)


def _copy_with(dataset: Path, work: Path, relative: str, data: bytes) -> Path:
    copy = shutil.copytree(dataset, work / "dataset", ignore=shutil.ignore_patterns("_viewer"))
    (copy / relative).write_bytes(data)
    return copy


# --- snapshots --------------------------------------------------------------------------------


def read_snapshot(data: bytes, work: Path) -> None:
    path = work / SNAPSHOT
    path.write_bytes(data)
    summarize(load_snapshot(path))


def test_snapshot_reader_is_total_over_structural_damage(tmp_path: Path) -> None:
    seed = (SEED / SNAPSHOT).read_bytes()
    _check(run_series("snapshot_fields", seed, count(300), read_snapshot, tmp_path, mutator=mutate_snapshot))


def test_dump_of_structurally_damaged_snapshots_is_total(tmp_path: Path) -> None:
    def dump(data: bytes, work: Path) -> None:
        (work / SNAPSHOT).write_bytes(data)
        _quiet_main(["dump", str(work / SNAPSHOT)])

    seed = (SEED / SNAPSHOT).read_bytes()
    _check(run_series("dump_snapshot_fields", seed, count(60), dump, tmp_path, mutator=mutate_snapshot))


# --- the dataset's own files, damaged after ingest ----------------------------------------------


def _read_dataset(path: Path) -> None:
    dataset = Dataset(path)
    try:
        dataset.table("events")
        dataset.sql("SELECT count(*), sum(dur_ns) FROM events")
        dataset.ranks()
        dataset.rows("events")
    finally:
        dataset.close()


def test_readers_are_total_over_a_damaged_parquet_part(dataset: Path, tmp_path: Path) -> None:
    part = _events_part(dataset)
    relative = part.relative_to(dataset).as_posix()

    def target(data: bytes, work: Path) -> None:
        _read_dataset(_copy_with(dataset, work, relative, data))

    _check(run_series("parquet_part", part.read_bytes(), count(80), target, tmp_path))


def test_summary_is_total_over_a_damaged_parquet_part(dataset: Path, tmp_path: Path) -> None:
    part = _events_part(dataset)
    relative = part.relative_to(dataset).as_posix()

    def target(data: bytes, work: Path) -> None:
        _quiet_main(["summary", str(_copy_with(dataset, work, relative, data))])

    _check(run_series("summary_parquet_part", part.read_bytes(), count(12), target, tmp_path))


def test_readers_and_ingest_are_total_over_a_damaged_manifest(dataset: Path, tmp_path: Path) -> None:
    def target(data: bytes, work: Path) -> None:
        copy = _copy_with(dataset, work, directory.MANIFEST, data)
        try:
            _read_dataset(copy)
        finally:  # ingest into it too: it reads the manifest, removes parts and repairs
            if int.from_bytes(data[-2:] or b"\0", "little") % 4 == 0:
                _session(work / "profile", 0)
                report = ingest(IngestOptions(profile_dir=work / "profile", out=copy, jobs=1))
                for outcome in report.outcomes:
                    assert untyped_message(outcome.message or "") is None, outcome.message

    seed = (dataset / directory.MANIFEST).read_bytes()
    _check(run_series("dataset_json", seed, count(60), target, tmp_path, json=True))


@pytest.mark.slow
def test_viewer_index_is_total_over_a_damaged_index_file(dataset: Path, tmp_path: Path) -> None:
    from kinetoscope.viewer.indexing.index import ViewerIndex, index_path
    from kinetoscope.viewer.querying import queries

    index = ViewerIndex.open(Dataset(dataset))
    index.close()
    built = index_path(Dataset(dataset))
    relative = built.relative_to(dataset).as_posix()

    def target(data: bytes, work: Path) -> None:
        copy = shutil.copytree(dataset, work / "dataset")
        (copy / relative).write_bytes(data)
        opened = ViewerIndex.open(Dataset(copy))
        try:
            queries.meta(opened)
            queries.warnings(opened.cursor())
            queries.range_summary(opened, opened.t0_ns, opened.t0_ns + opened.span_ns, [])
        finally:
            opened.close()

    _check(run_series("viewer_index", built.read_bytes(), count(24), target, tmp_path))


# --- several sessions, one bad file -----------------------------------------------------------


@pytest.fixture(scope="module")
def tree_events(tmp_path_factory: pytest.TempPathFactory) -> int:
    work = tmp_path_factory.mktemp("tree")
    for rank in range(3):
        _session(work / "profile", rank)
    return _ingested_events(work)


TREE_FILES = (SNAPSHOT, layout.TRACE_INFO, "ntrace.pb", "host_mem.pb", "cpu_util.pb")


def _tree_with_one_bad(name: str, tree_events: int) -> Callable[[bytes, Path], None]:
    def target(data: bytes, work: Path) -> None:
        sessions = [_session(work / "profile", rank) for rank in range(3)]
        (sessions[1] / name).write_bytes(data)
        events = _ingested_events(work)
        assert events == tree_events, f"one damaged {name} cost trace events: {events} of {tree_events}"
        _read_dataset(work / "dataset")

    return target


@pytest.mark.parametrize("name", TREE_FILES)
def test_a_tree_with_one_bad_file_is_ingested_whole(name: str, tree_events: int, tmp_path: Path) -> None:
    seed = (SEED / name).read_bytes()
    mutator = mutate_snapshot if name == SNAPSHOT else None
    series = f"tree_{name}"
    _check(run_series(series, seed, count(6), _tree_with_one_bad(name, tree_events), tmp_path, mutator=mutator))

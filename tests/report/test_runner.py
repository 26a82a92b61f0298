"""The summary's one plan and runner (``report.runner``): each way is reached through the options a
user has, and the user's settings (``--categories``, ``--device``) travel with every rank's task."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.cli import main
from kinetoscope.cli import summary as summary_command
from kinetoscope.query import Dataset
from kinetoscope.report import settings
from kinetoscope.report.runner import AT_ONCE, BY_RANK, CLUSTER, plan
from kinetoscope.report.settings import ReportOptions

from ..kineto_gen import TrainingSpec, write_dataset


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two ranks over two steps."""
    return write_dataset(tmp_path_factory.mktemp("runner") / "ds", TrainingSpec(run="train", ranks=2, steps=2))


def test_the_plan_follows_the_options(built: Path) -> None:
    dataset = Dataset(built)
    assert plan(dataset, ReportOptions(), None) == AT_ONCE  # small: every rank at once
    assert plan(dataset, ReportOptions(by_rank=True), None) == BY_RANK
    assert plan(dataset, ReportOptions(by_rank=False), None) == AT_ONCE
    assert plan(dataset, ReportOptions(scheduler="tcp://127.0.0.1:1"), None) == CLUSTER
    assert plan(dataset, ReportOptions(run="no such run", by_rank=True), None) == AT_ONCE  # no ranks


def _analysis_threads(monkeypatch: pytest.MonkeyPatch, cpus: int | None = None) -> list[int]:
    """The threads each run of the analyses was given (every rank at once, and each rank's rank by
    rank); ``cpus``: the machine's CPUs as the summary sees them (None: as they are)."""
    from kinetoscope.analysis import per_rank, tables

    if cpus is not None:
        monkeypatch.setattr(settings, "default_threads", lambda: cpus)
        monkeypatch.setattr(summary_command, "default_threads", lambda: cpus)

    given: list[int] = []
    threaded = tables.threaded

    def counted(calls: Any, workers: int, after_each: Any = None) -> Any:
        given.append(workers)
        return threaded(calls, workers, after_each)

    monkeypatch.setattr(tables, "threaded", counted)
    monkeypatch.setattr(per_rank, "threaded", counted)
    return given


def test_a_small_dataset_is_analysed_on_one_thread(
    built: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a dataset of a few thousand events, on a machine of three CPUs
    given = _analysis_threads(monkeypatch, cpus=3)
    # WHEN the summary runs every rank at once: one thread analyses it (a second one holds rows of its own)
    one = _summary(capsys, str(built), "--no-by-rank")
    assert given == [1]
    # THEN from THREADED_EVENTS events on the default threads run, with the same document
    monkeypatch.setattr(settings, "THREADED_EVENTS", 0)
    assert _summary(capsys, str(built), "--no-by-rank") == one
    assert given == [1, 3]
    # AND from SERIAL_EVENTS events on one thread again (each running analysis holds rows of its own)
    monkeypatch.setattr(settings, "SERIAL_EVENTS", 0)
    assert _summary(capsys, str(built), "--no-by-rank") == one
    assert given == [1, 3, 1]
    # AND threads the user asks for run whatever the size
    monkeypatch.setattr(settings, "THREADED_EVENTS", 10**12)
    assert _summary(capsys, str(built), "--threads", "2", "--no-by-rank") == one
    assert given == [1, 3, 1, 2]


def test_a_large_rank_is_analysed_on_one_thread_rank_by_rank(
    built: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a dataset of several ranks, summarised rank by rank in this process on a machine of three CPUs
    given = _analysis_threads(monkeypatch, cpus=3)
    ranks = _summary(capsys, str(built), "--by-rank", "--workers", "1")
    assert set(given) == {3}
    # WHEN each rank holds SERIAL_EVENTS events or more: THEN one thread analyses each, with the same document
    monkeypatch.setattr(settings, "SERIAL_EVENTS", 0)
    del given[:]
    assert _summary(capsys, str(built), "--by-rank", "--workers", "1") == ranks
    assert set(given) == {1}
    # AND threads the user asks for run whatever the size
    del given[:]
    assert _summary(capsys, str(built), "--by-rank", "--workers", "1", "--threads", "2") == ranks
    assert set(given) == {2}


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """A Dask cluster of one worker process on this machine."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


def _summary(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, object]:
    capsys.readouterr()
    assert main(["summary", *argv, "--json"]) == 0
    document: dict[str, object] = json.loads(capsys.readouterr().out)
    return document


@pytest.mark.slow
def test_settings_travel_with_each_ranks_task_to_a_cluster(
    built: Path, scheduler: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a category file and a device, which a cluster's workers cannot read from this process
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps({"my products": ["mm", "gemm"]}))
    flags = (str(built), "--categories", str(rules), "--device", "H100 SXM")
    # WHEN the summary runs on the cluster, rank by rank in worker processes, and every rank at once here
    remote = _summary(capsys, *flags, "--scheduler", scheduler)
    pool = _summary(capsys, *flags, "--workers", "2")
    local = _summary(capsys, *flags, "--no-by-rank")
    # THEN each says what the local summary says, with the user's categories and device
    assert remote == local and pool == local
    analyses = local["analyses"]
    assert isinstance(analyses, dict)
    assert "my products" in {row["category"] for row in analyses["time_by_category"]["rows"]}
    assert {row["device"] for row in analyses["roofline_devices"]["rows"]} == {"H100 SXM"}

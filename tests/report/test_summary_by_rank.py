"""``summary --by-rank`` (one rank's tables at a time) gives the document ``--no-by-rank`` (every rank
at once) gives, byte for byte: every analysis, the across-ranks ones and the findings with their
deep links, under every option that changes what is analysed."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import json
import multiprocessing
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.cli import main
from kinetoscope.dataset.directory import MANIFEST
from kinetoscope.dataset.schema import SCHEMA_VERSION
from kinetoscope.query import Dataset
from kinetoscope.report import rank_by_rank as summary_ranks
from kinetoscope.report import settings

from ..ingest.helpers import ingested_scenario
from ..kineto_gen import TrainingSpec, write_dataset


@pytest.fixture(scope="module")
def dlrm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The 8-rank NCCL DLRM step (tests/data/dlrm_8rank), ingested."""
    return ingested_scenario("dlrm_8rank", tmp_path_factory.mktemp("by-rank"))


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three ranks over several steps, the last one with dropped events and a truncated file."""
    return write_dataset(tmp_path_factory.mktemp("by-rank-built") / "ds", TrainingSpec(run="train", ranks=3, steps=4))


def _summary(dataset: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    capsys.readouterr()
    assert main(["summary", str(dataset), *flags]) == 0
    return capsys.readouterr().out


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The ranks the summary read one at a time."""
    seen: list[Any] = []
    share: Callable[..., Any] = summary_ranks.RankPlan.share

    def counted(*args: Any) -> Any:
        seen.append(args[-1])
        return share(*args)

    monkeypatch.setattr(summary_ranks.RankPlan, "share", counted)
    return seen


FLAGS = [
    ("--json",),
    ("--json", "--steady-state"),
    ("--json", "--window-launched-only"),
    ("--json", "--top", "2", "--threads", "1"),
    ("--json", "--only", "stragglers,kernel_type_breakdown,matched_collectives,collective_arrivals,step_times"),
    ("--json", "--only", "collective_waits,clock_offsets,communication_overlap,overview"),
    ("--markdown",),
]


@pytest.mark.parametrize("flags", FLAGS, ids=" ".join)
def test_rank_by_rank_is_every_rank_at_once(
    dlrm: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, flags: tuple[str, ...]
) -> None:
    # GIVEN the 8-rank dataset; WHEN it is summarised every rank at once, then rank by rank
    seen = _counting(monkeypatch)
    at_once = _summary(dlrm, capsys, *flags, "--no-by-rank")
    assert seen == []
    by_rank = _summary(dlrm, capsys, *flags, "--by-rank", "--workers", "1")
    # THEN each rank was read on its own (here, not in workers), and the documents are the same
    assert sorted(seen) == [("prof", rank) for rank in range(8)]
    assert by_rank == at_once
    # AND two worker processes making the ranks' shares give it too
    monkeypatch.undo()
    assert _summary(dlrm, capsys, *flags, "--workers", "2") == at_once
    if flags == ("--json",):
        document = json.loads(by_rank)
        analyses = document["analyses"]
        assert document["findings"] and analyses["matched_collectives"]["rows"] and analyses["stragglers"]["rows"]


@pytest.mark.parametrize(
    "flags", [("--json",), ("--json", "--run", "train"), ("--json", "--steady-state")], ids=" ".join
)
def test_rank_by_rank_on_steps_and_damaged_ranks(
    built: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...]
) -> None:
    at_once = _summary(built, capsys, *flags, "--no-by-rank")
    assert _summary(built, capsys, *flags, "--by-rank") == at_once
    step_times = json.loads(at_once)["analyses"]["step_times"]["rows"]
    assert step_times and {row["ranks"] for row in step_times} == {3}


def test_large_datasets_of_several_ranks_go_rank_by_rank(
    dlrm: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the threshold under the dataset's events; WHEN summary runs without --by-rank
    seen = _counting(monkeypatch)
    _summary(dlrm, capsys, "--json")
    assert seen == []  # the DLRM step is small: every rank at once
    monkeypatch.setattr(settings, "BY_RANK_EVENTS", 1)
    _summary(dlrm, capsys, "--json", "--workers", "1")
    # THEN it went rank by rank
    assert sorted(seen) == [("prof", rank) for rank in range(8)]


def test_a_dataset_or_run_without_ranks_gives_the_same_document_both_ways(
    tmp_path: Path, built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "ds"
    empty.mkdir()
    (empty / MANIFEST).write_text(json.dumps({"schema_version": SCHEMA_VERSION, "runs": [], "sessions": {}}))
    for dataset, flags in ((empty, ()), (built, ("--run", "no such run"))):
        at_once = _summary(dataset, capsys, "--json", *flags, "--no-by-rank")
        assert _summary(dataset, capsys, "--json", *flags, "--by-rank") == at_once
        assert json.loads(at_once)["analyses"]["overview"]["rows"] == []


def test_events_of_a_rank_the_manifest_does_not_list_are_summarised(
    tmp_path: Path, built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a copy of the 3-rank dataset whose manifest lost rank 1's session (a stale manifest)
    copy = tmp_path / "ds"
    shutil.copytree(built, copy)
    manifest = json.loads((copy / MANIFEST).read_text())
    manifest["sessions"] = {k: v for k, v in manifest["sessions"].items() if v["rank"] != 1}
    (copy / MANIFEST).write_text(json.dumps(manifest))
    # THEN rank by rank still reads rank 1's events, as every rank at once does
    at_once = _summary(copy, capsys, "--json", "--no-by-rank")
    assert _summary(copy, capsys, "--json", "--by-rank") == at_once
    assert {row["rank"] for row in json.loads(at_once)["analyses"]["top_kernels"]["rows"]} == {0, 1, 2}


def test_only_analyses_that_read_no_events_leave_a_damaged_events_part_unread(
    tmp_path: Path, built: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a copy whose rank 0 events part is cut in half, and the threshold under its events
    copy = tmp_path / "ds"
    shutil.copytree(built, copy)
    (part,) = (copy / "events").glob("run=*/rank=0/*.parquet")
    part.write_bytes(part.read_bytes()[: part.stat().st_size // 2])
    monkeypatch.setattr(settings, "BY_RANK_EVENTS", 1)
    # THEN the host samples are summarised without reading the events (nor their footers)
    assert _summary(copy, capsys, "--json", "--only", "host_samples")


def test_worker_processes_give_the_same_document(
    dlrm: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the 8-rank dataset summarised every rank at once; WHEN two spawned worker processes
    # make the ranks' shares side by side (each reads its ranks where the dataset lies)
    from kinetoscope.report import rank_pool

    at_once = _summary(dlrm, capsys, "--json", "--no-by-rank")
    made, tasks = rank_pool.pool, []

    @contextlib.contextmanager
    def counted(count: int, threads: int) -> Iterator[Any]:
        with made(count, threads) as executor:
            submit = executor.submit
            executor.submit = lambda *args: tasks.append(args[1:]) or submit(*args)  # type: ignore[method-assign]
            yield executor

    monkeypatch.setattr(rank_pool, "pool", counted)
    loads: list[Any] = []
    load = Dataset.load
    monkeypatch.setattr(Dataset, "load", lambda *args, **kwargs: loads.append(kwargs) or load(*args, **kwargs))
    by_workers = _summary(dlrm, capsys, "--json", "--by-rank", "--workers", "2")
    # THEN each rank was a task of the workers (none read here, nor early), and the document is the same
    assert sorted(tasks) == [(("prof", rank),) for rank in range(8)]
    assert loads == []
    assert by_workers == at_once


def test_workers_follow_the_cpus_and_the_memory(dlrm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from kinetoscope.report import rank_pool

    dataset = Dataset(dlrm)
    monkeypatch.setattr(rank_pool, "available_bytes", lambda: 64 << 30)
    assert rank_pool.workers(dataset, None, 3) == 3  # as given
    assert rank_pool.workers(dataset, None, 99) == 8  # at most one per rank
    monkeypatch.setattr(rank_pool, "cpus", lambda: 2)
    assert rank_pool.workers(dataset, None, None) == 1  # two CPUs: this process alone (its memory)
    assert rank_pool.threads_per_worker(2, 2) == 1
    monkeypatch.setattr(rank_pool, "cpus", lambda: 12)
    assert rank_pool.workers(dataset, None, None) == 6  # one per two CPUs
    monkeypatch.setattr(rank_pool, "cpus", lambda: 32)
    assert rank_pool.workers(dataset, None, None) == 8  # at most one per rank
    assert rank_pool.threads_per_worker(4, 8) == 4
    monkeypatch.setattr(rank_pool, "available_bytes", lambda: 3 * rank_pool.BASE_BYTES)  # a small container
    assert rank_pool.workers(dataset, None, None) == 2
    monkeypatch.setattr(rank_pool, "BYTES_PER_EVENT", 1 << 40)  # a rank's peak beyond the memory
    assert rank_pool.workers(dataset, None, None) == 1


def test_workers_need_rank_by_rank_here(
    dlrm: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for flags in (("--no-by-rank",), ("--scheduler", "tcp://127.0.0.1:1")):
        assert main(["summary", str(dlrm), "--workers", "2", *flags]) != 0
        assert "--workers makes the summary rank by rank here" in capsys.readouterr().err
    # a scheduler named by the environment gives way to --workers, which asks for this machine
    at_once = _summary(dlrm, capsys, "--json", "--no-by-rank")
    monkeypatch.setenv("KINETOSCOPE_SCHEDULER", "tcp://127.0.0.1:1")
    assert _summary(dlrm, capsys, "--json", "--workers", "1") == at_once


def test_workers_must_be_one_or_more(dlrm: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(dlrm), "--workers", "0"]) != 0
    assert "--workers must be 1 or more" in capsys.readouterr().err


def test_a_worker_that_dies_is_a_clear_error(
    dlrm: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN workers that end abruptly as they start (as the kernel's OOM killer ends one)
    from kinetoscope.report import rank_pool

    @contextlib.contextmanager
    def dying(count: int, threads: int) -> Iterator[Any]:
        context = multiprocessing.get_context("spawn")
        with cf.ProcessPoolExecutor(count, mp_context=context, initializer=_die) as executor:
            yield executor

    monkeypatch.setattr(rank_pool, "pool", dying)
    # THEN summary says what happened and what to do, without a traceback
    assert main(["summary", str(dlrm), "--json", "--by-rank", "--workers", "2"]) != 0
    err = capsys.readouterr().err
    assert "worker process ended abruptly" in err and "--workers 1" in err and "Traceback" not in err


def _die(*_: Any) -> None:
    os._exit(9)


def test_only_analyses_that_read_no_events_rank_by_rank(built: Path, capsys: pytest.CaptureFixture[str]) -> None:
    at_once = _summary(built, capsys, "--json", "--only", "host_samples", "--no-by-rank")
    assert _summary(built, capsys, "--json", "--only", "host_samples", "--by-rank", "--workers", "1") == at_once

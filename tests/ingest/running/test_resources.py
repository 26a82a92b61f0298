"""What ingest holds while it works: rows spilled to disk, workers sized to the memory, no pandas in workers."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import psutil
import pytest

from kinetoscope.dataset.directory import Manifest
from kinetoscope.dataset.target import LocalDataset
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.ingest.running import pipeline, worker
from kinetoscope.ingest.running.worker import NoPandas
from kinetoscope.report.opening import open_dataset
from kinetoscope.sessions.job_runs import assign_runs
from kinetoscope.sessions.tree import find_sessions

from ..helpers import HOST_PID, kernel, write_session, x


def test_rows_spilled_to_disk_give_the_same_dataset(tmp_path: Path) -> None:
    # GIVEN a session of several reader batches, each with its own name dictionary
    events = [x(f"op{i % 7}", i * 10, 5, **{"External id": i}) for i in range(60)]
    write_session(tmp_path / "prof", events)
    # WHEN its rows stay in memory, and when every batch after the first is spilled to disk
    kept = ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "a", jobs=1, batch_size=8))
    spilled = ingest(
        IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "b", jobs=1, batch_size=8, spool_bytes=1)
    )
    # THEN both are complete and hold the same rows, and no spill file is left behind
    assert kept.status == spilled.status == "ok"
    query = "SELECT id, name, ts_ns, args FROM events ORDER BY id"
    with open_dataset(tmp_path / "a") as a, open_dataset(tmp_path / "b") as b:
        assert len(a.sql(query).to_pylist()) == 60
        assert a.sql(query).to_pylist() == b.sql(query).to_pylist()
    assert not list((tmp_path / "b").glob("**/*.spool"))


def test_default_workers_are_as_many_as_the_free_memory_holds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN four sessions whose traces are counted large enough for workers, on a machine with many CPUs
    monkeypatch.setattr(pipeline.os, "cpu_count", lambda: 16)
    events = [x("aten::mm", 10, 40), kernel("gemm", 30, 60, correlation=1)]
    for rank in range(4):
        write_session(tmp_path / "prof", events, rank=rank, pid=HOST_PID + rank, world_size=4)
    options = IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")
    found = find_sessions(tmp_path / "prof", "salt", tmp_path / "scratch")
    jobs, _ = pipeline.plan_jobs(options, found, Manifest(), assign_runs((f.source for f in found), "run"),
                             LocalDataset(tmp_path / "ds"), damaged=[])
    sizes = {f.source.key("run"): pipeline.PARALLEL_MIN_BYTES // 2 for f in found}
    largest = max(sizes.values())
    per_worker = pipeline.WORKER_BASE_BYTES + pipeline.WORKER_BYTES_PER_TRACE_BYTE * largest
    # WHEN the memory available holds 2.5 workers, plenty, or less than one
    for available, expected in ((int(2.5 * per_worker), 2), (100 * per_worker, 4), (per_worker // 2, 1)):
        monkeypatch.setattr(psutil, "virtual_memory", lambda a=available: SimpleNamespace(available=a))
        # THEN that many workers are started (never fewer than one, never more than the sessions)
        assert pipeline.workers_for(options, jobs, sizes) == expected


def test_workers_refuse_pandas_and_nothing_else() -> None:
    # pyarrow imports pandas on its first array only to recognise pandas inputs; workers never give it any
    finder = NoPandas()
    with pytest.raises(ModuleNotFoundError, match="pandas"):
        finder.find_spec("pandas", None)
    with pytest.raises(ModuleNotFoundError):
        finder.find_spec("pandas.core.frame", None)
    assert finder.find_spec("pyarrow", None) is None and finder.find_spec("pandas_extra", None) is None


def test_the_callers_process_takes_sessions_too_and_a_failure_there_fails_only_that_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN three sessions, and ingest raising on the first session the caller's process takes
    for rank in range(3):
        write_session(tmp_path / "prof", [x("aten::mm", 10, 40)], rank=rank, pid=HOST_PID + rank, world_size=3)
    options = IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds", jobs=2)
    found = find_sessions(tmp_path / "prof", "salt", tmp_path / "scratch")
    jobs, _ = pipeline.plan_jobs(options, found, Manifest(), assign_runs((f.source for f in found), "run"),
                             LocalDataset(tmp_path / "ds"), damaged=[])
    real = worker.run_job
    taken_here: list[int] = []

    def ingest_here(job: Any) -> Any:
        taken_here.append(job.source.rank)
        if len(taken_here) == 1:
            raise RuntimeError("disk on fire")
        return real(job)

    monkeypatch.setattr(worker, "run_job", ingest_here)
    outcomes: list[Any] = []
    # WHEN they run in two processes: the caller's and one worker
    worker.run_parallel(jobs, 2, outcomes.append)
    # THEN the caller's process took a session, that one failed with the reason, the others are whole
    assert taken_here and sorted(o.rank for o in outcomes) == [0, 1, 2]
    failed = {o.rank: o for o in outcomes if o.status == "failed"}
    assert list(failed) == [taken_here[0]] and "disk on fire" in failed[taken_here[0]].message
    assert all(o.status == "ok" for o in outcomes if o.rank != taken_here[0])


def test_workers_started_ahead_are_the_ones_the_ingest_takes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN three sessions, and two workers started before the ingest
    for rank in range(3):
        write_session(tmp_path / "prof", [x("aten::mm", 10, 40)], rank=rank, pid=HOST_PID + rank, world_size=3)
    worker.prestart(2)
    ahead = worker.waiting_pids()
    assert len(ahead) == 2 and all(psutil.pid_exists(pid) for pid in ahead)
    # WHEN three processes ingest them
    report = ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds", jobs=3))
    # THEN the two workers started ahead did the work and have ended; none waits any more
    assert report.status == "ok" and len(report.outcomes) == 3
    assert worker.waiting_pids() == [] and not any(psutil.pid_exists(pid) for pid in ahead)
    # AND the dataset is the one a single process writes
    single = ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "one", jobs=1))
    query = "SELECT rank, name, ts_ns, dur_ns FROM events ORDER BY rank, id"
    with open_dataset(tmp_path / "ds") as a, open_dataset(tmp_path / "one") as b:
        assert single.status == "ok" and a.sql(query).to_pylist() == b.sql(query).to_pylist()


def test_a_worker_started_ahead_that_no_ingest_takes_ends_with_the_process() -> None:
    # GIVEN a process that starts a worker ahead and then ends without ingesting
    import subprocess
    import sys

    code = "from kinetoscope.ingest.running import worker; worker.prestart(1); print(worker.waiting_pids()[0])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    # THEN its worker has ended with it (waited for, not left running)
    assert not psutil.pid_exists(int(done.stdout))


def test_the_processes_for_a_tree_follow_sessions_jobs_and_sizes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline.os, "cpu_count", lambda: 8)
    monkeypatch.setattr(psutil, "virtual_memory", lambda: SimpleNamespace(available=1 << 40))
    big = pipeline.PARALLEL_MIN_BYTES
    assert pipeline.processes_for(1, [big]) == 1  # one session: this process alone
    assert pipeline.processes_for(3, [big] * 3, jobs=2) == 2  # --jobs, at most one per session
    assert pipeline.processes_for(3, [1, 1, 1]) == 1  # too little trace for workers
    assert pipeline.processes_for(3, [big] * 3) == 3 and pipeline.processes_for(12, [big] * 12) == 8


def test_the_expanded_size_of_a_trace(tmp_path: Path) -> None:
    import gzip

    from kinetoscope.format.kineto.trace_source import expanded_size_bytes

    text = b'{"traceEvents": []}' * 1000
    (tmp_path / "t.json").write_bytes(text)
    (tmp_path / "t.json.gz").write_bytes(gzip.compress(text))
    (tmp_path / "tiny.gz").write_bytes(b"\x1f\x8b")
    assert expanded_size_bytes(tmp_path / "t.json") == len(text)
    assert expanded_size_bytes(tmp_path / "t.json.gz") == len(text)
    assert expanded_size_bytes(tmp_path / "tiny.gz") == 2


def test_workers_are_counted_at_the_sessions_to_ingest_not_the_unchanged_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN four sessions found, of which two are to be ingested again (two unchanged), their
    # traces counted at sizes that reach the threshold for workers together and the two do not
    monkeypatch.setattr(pipeline.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(psutil, "virtual_memory", lambda: SimpleNamespace(available=1 << 40))
    for rank in range(4):
        write_session(tmp_path / "prof", [x("aten::mm", 10, 40)], rank=rank, pid=HOST_PID + rank, world_size=4)
    options = IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")
    found = find_sessions(tmp_path / "prof", "salt", tmp_path / "scratch")
    jobs, _ = pipeline.plan_jobs(options, found, Manifest(), assign_runs((f.source for f in found), "run"),
                             LocalDataset(tmp_path / "ds"), damaged=[])
    sizes = {f.source.key("run"): pipeline.PARALLEL_MIN_BYTES // 3 for f in found}
    # THEN all four make workers, the two alone stay in this process
    assert pipeline.workers_for(options, jobs, sizes) == 4
    assert pipeline.workers_for(options, jobs[:2], sizes) == 1

"""Worker processes of ingest: ``python -m kinetoscope.ingest.running.worker`` reads jobs (one session each)
as JSON lines on stdin and writes one outcome line per job on stdout, so a worker's start-up
(interpreter, imports) is paid once for all the sessions it takes.

Workers are plain subprocesses rather than multiprocessing children, so they never re-run
the caller's ``__main__`` (a script or notebook calling ``ingest`` needs no ``if __name__``
guard) and never inherit the caller's threads.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import queue
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinetoscope import _helper_process as helper
from kinetoscope._freed_memory import map_large_blocks
from kinetoscope.format.kineto.trace_source import GzipLimits
from kinetoscope.ingest.rows.trace_events import TraceStats
from kinetoscope.ingest.session.session_ingest import FAILED, SessionJob, SessionOutcome
from kinetoscope.ingest.session.staged import run_job
from kinetoscope.sessions.sources import SessionSource, read_info

if TYPE_CHECKING:  # imported where a worker starts: a process that ingests its sessions itself starts none
    import importlib.machinery
    import subprocess


def job_to_json(job: SessionJob) -> str:
    source = job.source
    return json.dumps(
        {
            "path": str(source.path),
            "session_id": source.session_id,
            "rank": source.rank,
            "slot": source.slot,
            "rank_note": source.rank_note,
            "run": job.run,
            "dataset": str(job.dataset),
            "key": job.key,
            "fingerprint": job.fingerprint,
            "batch_size": job.batch_size,
            "spool_bytes": job.spool_bytes,
            "source_url": job.source_url,
            "dataset_url": job.dataset_url,
            "gzip_limits": [job.gzip_limits.max_ratio, job.gzip_limits.max_bytes],
        }
    )


def job_from_json(text: str) -> SessionJob:
    """The job of ``job_to_json``; its session's metadata is read again where it runs (from the
    object-store copy for a session there, see ``staged``)."""
    data = json.loads(text)
    path = Path(data["path"])
    info, problem = read_info(path) if not data.get("source_url") else (None, "")
    source = SessionSource(
        path, data["session_id"], data["rank"], data["slot"], info, problem, data.get("rank_note", "")
    )
    return SessionJob(
        source,
        data["run"],
        Path(data["dataset"]),
        data["key"],
        data["fingerprint"],
        data["batch_size"],
        data["spool_bytes"],
        data.get("source_url", ""),
        data.get("dataset_url", ""),
        GzipLimits(*data["gzip_limits"]) if "gzip_limits" in data else GzipLimits(),
    )


def run_job_json(text: str) -> SessionOutcome:
    """A job sent as ``job_to_json`` text: what a cluster's workers run (TraceInfo messages do not pickle)."""
    return run_job(job_from_json(text))


def outcome_from_json(text: str) -> SessionOutcome:
    data = json.loads(text)
    data["stats"] = TraceStats(**data["stats"])
    return SessionOutcome(**data)


def _failed(job: SessionJob, message: str) -> SessionOutcome:
    source = job.source
    return SessionOutcome(job.key, job.run, source.rank, source.session_id, job.fingerprint, FAILED, message=message)


class _Worker:
    """One worker process: jobs go in as JSON lines on stdin, outcomes come back one line each."""

    def __init__(self) -> None:
        env = helper.environment()
        # Arrow's default pool (mimalloc) keeps freed pages for reuse, which a worker that frees each
        # batch once written never needs: peak RSS of a 55 MB rank 193 -> 170 MB, same time. Read by
        # Arrow when it starts, so it is set here rather than in the worker.
        env.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
        self.errors = tempfile.TemporaryFile(mode="w+")  # noqa: SIM115 - closed in close()
        import subprocess

        command = helper.module_command("kinetoscope.ingest.running.worker")
        self.process: subprocess.Popen[str] = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.errors, text=True, env=env
        )

    def run(self, job: SessionJob) -> SessionOutcome:
        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(job_to_json(job) + "\n")
            self.process.stdin.flush()
        except OSError:
            return _failed(job, f"worker process failed: {self._last_error()}")
        line = self.process.stdout.readline()
        return outcome_from_json(line) if line.strip() else _failed(job, f"worker process failed: {self._last_error()}")

    def _last_error(self) -> str:
        self.errors.seek(0)
        lines = self.errors.read().strip().splitlines()
        return lines[-1] if lines else f"exit code {self.process.poll()}"

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        if self.process.stdin is not None and not self.process.stdin.closed:
            self.process.stdin.close()
        self.process.wait()
        self.errors.close()


def _taken(jobs: queue.Queue[SessionJob]) -> Iterator[SessionJob]:
    """The jobs left in the queue, one at a time (several threads take from it)."""
    while True:
        try:
            yield jobs.get_nowait()
        except queue.Empty:
            return


_warm: list[_Worker] = []
_warm_lock = threading.Lock()


def prestart(count: int) -> None:
    """Start ``count`` workers now, ahead of the ingest that will take them, so that their
    interpreter start and imports (about a quarter of a second of CPU each) run beside the
    caller's own work (importing the traces) rather than at the ingest's start. Workers no
    ingest takes end with this process."""
    with _warm_lock:
        if count > 0 and not _warm:
            atexit.register(_close_warm)
        _warm.extend(_Worker() for _ in range(count - len(_warm)))


def waiting_pids() -> list[int]:
    """The process ids of the workers started ahead (`prestart`) that no ingest has taken yet."""
    with _warm_lock:
        return [worker.process.pid for worker in _warm]


def _take_worker() -> _Worker:
    """A started worker that is still alive, else a new one."""
    with _warm_lock:
        while _warm:
            worker = _warm.pop()
            if worker.alive:
                return worker
            worker.close()
    return _Worker()


def _close_warm() -> None:
    with _warm_lock:
        while _warm:
            _warm.pop().close()


def _serve(jobs: queue.Queue[SessionJob], results: queue.Queue[SessionOutcome]) -> None:
    worker = _take_worker()
    try:
        for job in _taken(jobs):
            if not worker.alive:  # a crash costs the job it was on, not the ones after it
                worker.close()
                worker = _Worker()
            results.put(worker.run(job))
    finally:
        worker.close()


def _serve_here(jobs: queue.Queue[SessionJob], results: queue.Queue[SessionOutcome]) -> None:
    """Sessions ingested in the caller's process, beside the workers: it would otherwise only wait,
    and one worker fewer is one interpreter and one set of imports fewer in memory."""
    for job in _taken(jobs):
        try:
            outcome = run_job(job)
        except Exception as exc:  # noqa: BLE001 - the session fails, as it would in a worker, and the rest go on
            outcome = _failed(job, f"{type(exc).__name__}: {exc}")
        results.put(outcome)


def run_parallel(jobs: list[SessionJob], processes: int, done: Callable[[SessionOutcome], None]) -> None:
    """Ingest ``jobs`` (largest first) in ``processes`` processes, the caller's and long-lived workers,
    calling ``done`` as each finishes."""
    pending: queue.Queue[SessionJob] = queue.Queue()
    for job in jobs:
        pending.put(job)
    results: queue.Queue[SessionOutcome] = queue.Queue()
    threads = [threading.Thread(target=_serve_here, args=(pending, results), daemon=True)]
    threads += [threading.Thread(target=_serve, args=(pending, results), daemon=True) for _ in range(processes - 1)]
    for thread in threads:
        thread.start()
    for _ in jobs:
        done(results.get())
    for thread in threads:
        thread.join()


class NoPandas:
    """Refuses ``import pandas`` in a worker: pyarrow imports pandas, when installed, on its first
    array (about 0.25 s and 50 MB per process) only to recognise pandas inputs, which ingest never
    gives it. Without pandas pyarrow works as it does where pandas is not installed. A finder of
    ``sys.meta_path`` by its ``find_spec`` alone (``importlib.abc.MetaPathFinder`` adds nothing it
    uses, and its import, about 5 ms, would be paid by every process that only ingests here)."""

    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"ingest workers do not load {name}", name=name)
        return None


def main() -> None:
    if "pandas" not in sys.modules:
        sys.meta_path.insert(0, NoPandas())
    map_large_blocks()  # a worker only ingests: a session-wide step's copies go back once freed
    for line in sys.stdin:
        if line.strip():
            outcome = run_job(job_from_json(line))
            print(json.dumps(dataclasses.asdict(outcome)), flush=True)


if __name__ == "__main__":
    main()

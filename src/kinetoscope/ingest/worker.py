"""A worker process ingesting one session: ``python -m kinetoscope.ingest.worker JOB`` takes the
job as JSON and writes the outcome as JSON on stdout.

Workers are plain subprocesses rather than multiprocessing children, so they never re-run
the caller's ``__main__`` (a script or notebook calling ``ingest`` needs no ``if __name__``
guard) and never inherit the caller's threads.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from kinetoscope.ingest.session_ingest import FAILED, SessionJob, SessionOutcome, ingest_session
from kinetoscope.ingest.sources import SessionSource, read_info
from kinetoscope.ingest.trace_events import TraceStats

_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])


def job_to_json(job: SessionJob) -> str:
    source = job.source
    return json.dumps(
        {
            "path": str(source.path),
            "session_id": source.session_id,
            "rank": source.rank,
            "slot": source.slot,
            "run": job.run,
            "dataset": str(job.dataset),
            "key": job.key,
            "fingerprint": job.fingerprint,
            "batch_size": job.batch_size,
            "spool_bytes": job.spool_bytes,
        }
    )


def job_from_json(text: str) -> SessionJob:
    data = json.loads(text)
    path = Path(data["path"])
    info, problem = read_info(path)
    source = SessionSource(path, data["session_id"], data["rank"], data["slot"], info, problem)
    return SessionJob(
        source,
        data["run"],
        Path(data["dataset"]),
        data["key"],
        data["fingerprint"],
        data["batch_size"],
        data["spool_bytes"],
    )


def outcome_from_json(text: str) -> SessionOutcome:
    data = json.loads(text)
    data["stats"] = TraceStats(**data["stats"])
    return SessionOutcome(**data)


def _failed(job: SessionJob, message: str) -> SessionOutcome:
    source = job.source
    return SessionOutcome(job.key, job.run, source.rank, source.session_id, job.fingerprint, FAILED, message=message)


def _start(job: SessionJob) -> subprocess.Popen[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH", "")) if p)
    command = [sys.executable, "-m", "kinetoscope.ingest.worker", job_to_json(job)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _collect(job: SessionJob, process: subprocess.Popen[str]) -> SessionOutcome:
    out, err = process.communicate()
    if process.returncode != 0 or not out.strip():
        tail = err.strip().splitlines()[-1] if err.strip() else f"exit code {process.returncode}"
        return _failed(job, f"worker process failed: {tail}")
    return outcome_from_json(out)


def run_parallel(jobs: list[SessionJob], workers: int, done: Callable[[SessionOutcome], None]) -> None:
    """Ingest ``jobs`` in at most ``workers`` processes at a time, calling ``done`` as each finishes."""
    queue: Iterator[SessionJob] = iter(jobs)
    running: list[tuple[SessionJob, subprocess.Popen[str]]] = []
    for job in queue:
        running.append((job, _start(job)))
        if len(running) >= workers:
            break
    while running:
        job, process = running.pop(0)
        done(_collect(job, process))
        following = next(queue, None)
        if following is not None:
            running.append((following, _start(following)))


def main() -> None:
    job = job_from_json(sys.argv[1])
    outcome = ingest_session(job)
    print(json.dumps(dataclasses.asdict(outcome)))


if __name__ == "__main__":
    main()

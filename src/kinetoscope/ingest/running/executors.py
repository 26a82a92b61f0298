"""The seam between ingest and what runs its sessions: the local process pool (``worker``) by
default, or any ``concurrent.futures`` executor, such as a Dask cluster's
(``distributed.Client(address).get_executor()``).

Every runner calls ``staged.run_job`` on each job and hands each outcome to ``done`` as it
arrives; a job that raises (a lost worker, an unreachable store) fails that session only.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from kinetoscope._errors import ConfigError
from kinetoscope.format.kineto.trace_source import READ_PROGRESS
from kinetoscope.ingest.running.worker import job_to_json, run_job_json, run_parallel
from kinetoscope.ingest.session.session_ingest import FAILED, SessionJob, SessionOutcome
from kinetoscope.ingest.session.staged import run_job

Done = Callable[[SessionOutcome], None]
# (the session, the bytes of its trace file read so far, the file's size in bytes)
Reading = Callable[[str, int, int], None]


def run_local(jobs: list[SessionJob], processes: int, done: Done, reading: Reading | None = None) -> None:
    """In this process alone, or in ``processes`` processes (this one and long-lived workers).
    ``reading`` follows the reading of each trace file where the sessions run one after another
    here (not in workers, which report only when a session ends)."""
    if processes <= 1:
        for job in jobs:
            with _following(job, reading):
                outcome = _run_guarded(job)
            done(outcome)
        return
    run_parallel(jobs, processes, done)


def _run_guarded(job: SessionJob) -> SessionOutcome:
    """``run_job``, where an error kinetoscope did not foresee fails that session alone (named in its
    outcome), as it would in a worker process, and the sessions after it are still ingested."""
    try:
        return run_job(job)
    except Exception as exc:  # noqa: BLE001 - one session's failure must not end the tree's ingest
        return failed(job, f"{type(exc).__name__}: {exc}")


@contextmanager
def _following(job: SessionJob, reading: Reading | None) -> Iterator[None]:
    if reading is None:
        yield
        return
    session = job.source.session_id
    furthest = [0]  # what the bar shows never goes back

    def follow(path: Path, read_bytes: int, size_bytes: int) -> None:
        furthest[0] = max(furthest[0], min(read_bytes, size_bytes))  # a file still growing stops at 100 %
        reading(session, furthest[0], size_bytes)

    token = READ_PROGRESS.set(follow)
    try:
        yield
    finally:
        READ_PROGRESS.reset(token)


def run_on_executor(executor: cf.Executor, jobs: list[SessionJob], done: Done) -> None:
    """Each job as a task of ``executor``, outcomes handed on in the order they finish. Jobs travel as
    JSON text, read back where they run."""
    futures = {executor.submit(run_job_json, job_to_json(job)): job for job in jobs}
    for future in cf.as_completed(futures):
        try:
            outcome = future.result()
        except Exception as exc:  # noqa: BLE001 - the session fails, the others go on
            outcome = failed(futures[future], f"task failed: {type(exc).__name__}: {exc}")
        done(outcome)


def failed(job: SessionJob, message: str) -> SessionOutcome:
    source = job.source
    return SessionOutcome(job.key, job.run, source.rank, source.session_id, job.fingerprint, FAILED, message=message)


@contextmanager
def cluster_executor(address: str) -> Iterator[cf.Executor]:
    """The executor of the Dask cluster whose scheduler is at ``address`` (``tcp://host:port``)."""
    try:
        from distributed import Client
    except ImportError as exc:
        needs = "ingest on a cluster needs Dask's distributed scheduler: pip install 'kinetoscope[fleet]'"
        raise ConfigError(needs) from exc
    try:
        client = Client(address)  # type: ignore[no-untyped-call]
    except (OSError, ValueError) as exc:  # unreachable (a timeout is an OSError), or not an address
        raise ConfigError(f"{address}: cannot reach the Dask scheduler: {exc}") from exc
    with client:
        yield client.get_executor()  # type: ignore[no-untyped-call]

"""Ingest of a whole profile tree: find sessions, skip unchanged ones, run the rest in parallel.

Each session is ingested on its own (in a worker process when there is enough work to pay
for one), writes only its own parts, and reports an outcome; the manifest is updated at the
end. Re-running ingest on the same tree re-reads only the sessions whose files changed.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from kinetoscope._errors import SessionError
from kinetoscope._version import __version__
from kinetoscope.format import session_dir as layout
from kinetoscope.format.files import user_cache_root
from kinetoscope.ingest import dataset_dir as ds
from kinetoscope.ingest.schema import PARTITIONED, SCHEMA_VERSION
from kinetoscope.ingest.session_ingest import FAILED, OK, PARTIAL, SessionJob, SessionOutcome, ingest_session
from kinetoscope.ingest.sources import SessionSource, discover, fingerprint
from kinetoscope.ingest.trace_events import DEFAULT_SPOOL_BYTES
from kinetoscope.ingest.worker import run_parallel

DEFAULT_BATCH_SIZE = 10_000
# Below this much trace data, starting worker processes costs more than it saves.
PARALLEL_MIN_BYTES = 48 << 20
# What a worker is counted at: the process (interpreter, pyarrow) and its per-session data,
# which grows with the trace (keys, nesting) up to about this many times the trace's size.
WORKER_BASE_BYTES = 200 << 20
WORKER_BYTES_PER_TRACE_BYTE = 2
EMPTY_PART_KEY = "empty"

Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class IngestOptions:
    """How to ingest.

    ``run`` names the profile tree in the dataset (default: its directory name); ``jobs`` is
    the number of worker processes (0: one per CPU, used only when the traces are large
    enough); ``batch_size`` is how many events are decoded at once; ``spool_bytes`` how many
    bytes of rows a session keeps in memory before spilling them to disk; ``force`` re-reads
    sessions even when unchanged.
    """

    profile_dir: Path
    out: Path
    run: str | None = None
    jobs: int = 0
    batch_size: int = DEFAULT_BATCH_SIZE
    spool_bytes: int = DEFAULT_SPOOL_BYTES
    force: bool = False


@dataclass
class IngestReport:
    dataset: Path
    run: str
    outcomes: list[SessionOutcome] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # manifest paths outside the dataset, not touched

    @property
    def status(self) -> str:
        statuses = {o.status for o in self.outcomes}
        if FAILED in statuses and statuses == {FAILED} and not self.skipped:
            return FAILED
        return PARTIAL if statuses & {FAILED, PARTIAL} else OK

    @property
    def exit_code(self) -> int:
        return {OK: 0, PARTIAL: 1, FAILED: 2}[self.status]


def default_dataset_path(profile_dir: Path) -> Path:
    """Where ``ingest`` writes when no ``--out`` is given: ``<profile_dir>/.kinetoscope/dataset``,
    or a per-user cache directory when the profile tree is not writable."""
    inside = profile_dir / ".kinetoscope" / "dataset"
    if os.access(profile_dir, os.W_OK) or inside.exists():
        return inside
    cache = user_cache_root()
    digest = hashlib.blake2b(str(profile_dir.resolve()).encode(), digest_size=6).hexdigest()
    return cache / f"{ds.run_name(profile_dir.resolve().name)}-{digest}"


def _salt() -> str:
    return f"{SCHEMA_VERSION}/{__version__}"


def _plan(
    options: IngestOptions, sources: list[SessionSource], manifest: ds.Manifest, run: str
) -> tuple[list[SessionJob], list[str]]:
    jobs, skipped = [], []
    for source in sources:
        key = source.key(run)
        fp = fingerprint(source, _salt())
        known = manifest.sessions.get(key)
        if known is not None and known.fingerprint == fp and not options.force:
            skipped.append(key)
            continue
        jobs.append(SessionJob(source, run, options.out, key, fp, options.batch_size, options.spool_bytes))
    return jobs, skipped


def _trace_bytes(job: SessionJob) -> int:
    trace = job.source.path / layout.TRACE_JSON
    return trace.stat().st_size if trace.exists() else 0


def _workers(options: IngestOptions, jobs: list[SessionJob]) -> int:
    if len(jobs) < 2:
        return 1
    if options.jobs:
        return min(options.jobs, len(jobs))
    sizes = [_trace_bytes(j) for j in jobs]
    if sum(sizes) < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(os.cpu_count() or 1, len(jobs), _workers_that_fit(max(sizes))))


def _workers_that_fit(largest_trace_bytes: int) -> int:
    """How many workers the memory available now holds, each counted for the largest trace."""
    per_worker = WORKER_BASE_BYTES + WORKER_BYTES_PER_TRACE_BYTE * largest_trace_bytes
    return int(psutil.virtual_memory().available // per_worker)


def _run_jobs(jobs: list[SessionJob], workers: int, progress: Progress | None) -> list[SessionOutcome]:
    jobs = sorted(jobs, key=_trace_bytes, reverse=True)
    outcomes = []
    if workers <= 1:
        for done, job in enumerate(jobs, 1):
            outcomes.append(ingest_session(job))
            if progress:
                progress(done, len(jobs), job.source.session_id)
        return outcomes

    def finished(outcome: SessionOutcome) -> None:
        outcomes.append(outcome)
        if progress:
            progress(len(outcomes), len(jobs), outcome.session)

    run_parallel(jobs, workers, finished)
    return outcomes


def ingest(options: IngestOptions, progress: Progress | None = None) -> IngestReport:
    """Ingest every session under ``options.profile_dir`` into the dataset at ``options.out``."""
    profile_dir = options.profile_dir
    if not profile_dir.is_dir():
        what = "not a directory" if profile_dir.exists() else "no such file or directory"
        raise SessionError(f"{profile_dir}: {what}")
    sources = discover(profile_dir)
    if not sources:
        raise SessionError(
            f"{profile_dir}: no session directories found (expected <instance>_pid_<pid>/<timestamp>/ with "
            "trace_info.pb); for plain torch.profiler traces run `kinetoscope import` first"
        )
    run = ds.run_name(options.run or profile_dir.resolve().name)
    options.out.mkdir(parents=True, exist_ok=True)
    manifest = ds.load_manifest(options.out)
    jobs, skipped = _plan(options, sources, manifest, run)
    report = IngestReport(options.out, run, skipped=skipped)
    report.removed = _forget_stale(options.out, manifest, run, {s.key(run) for s in sources}, report.refused)
    for job in jobs:
        if job.key in manifest.sessions:
            report.refused += ds.remove_parts(options.out, manifest.sessions.pop(job.key).parts)
    report.outcomes = _run_jobs(jobs, _workers(options, jobs), progress)
    for outcome in report.outcomes:
        manifest.sessions[outcome.key] = outcome.record()
    _finish(options.out, manifest, run)
    return report


def _forget_stale(
    dataset: Path, manifest: ds.Manifest, run: str, current: set[str], refused: list[str]
) -> list[str]:
    """Remove the parts of sessions of ``run`` that are no longer in the profile tree."""
    stale = [key for key, record in manifest.sessions.items() if record.run == run and key not in current]
    for key in stale:
        refused += ds.remove_parts(dataset, manifest.sessions.pop(key).parts)
    return stale


def _finish(dataset: Path, manifest: ds.Manifest, run: str) -> None:
    if run not in manifest.runs:
        manifest.runs.append(run)
    ds.write_schema_table(dataset)
    for table in PARTITIONED:
        empty = ds.part_path(dataset, table.name, run, 0, EMPTY_PART_KEY)
        if not ds.table_files(dataset, table.name):
            ds.write_part(empty, table.file_schema().empty_table())
    ds.save_manifest(dataset, manifest)

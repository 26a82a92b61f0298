"""Ingest of a whole profile tree: find sessions, skip unchanged ones, run the rest in parallel.

Each session is ingested on its own (in a worker process when there is enough work to pay
for one, or as a task on a Dask cluster), writes only its own parts, and reports an outcome;
the manifest is updated at the end, by the caller alone. Re-running ingest on the same tree
re-reads only the sessions whose files changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from kinetoscope._processes import scratch_folder
from kinetoscope._version import __version__
from kinetoscope.dataset import directory
from kinetoscope.dataset.schema import SCHEMA_VERSION
from kinetoscope.dataset.storage import is_url
from kinetoscope.dataset.target import DatasetTarget, dataset_target
from kinetoscope.format.files import in_tree
from kinetoscope.format.private_dirs import private_dir, user_cache_root
from kinetoscope.ingest.rows.trace_events import DEFAULT_SPOOL_BYTES
from kinetoscope.ingest.running.executors import Reading, cluster_executor, run_local, run_on_executor
from kinetoscope.ingest.running.worker import prestart
from kinetoscope.ingest.session.session_ingest import FAILED, OK, PARTIAL, SessionJob, SessionOutcome
from kinetoscope.model import collectives as model_collectives
from kinetoscope.model import device_processes
from kinetoscope.sessions.job_runs import JobRuns, assign_runs, is_run_of_tree
from kinetoscope.sessions.tree import FoundSession, find_sessions, tree_name

DEFAULT_BATCH_SIZE = 10_000
# Below this much trace data, starting worker processes costs more than it saves.
PARALLEL_MIN_BYTES = 48 << 20
# What a worker is counted at: the process (interpreter, pyarrow) and its per-session data,
# which grows with the trace (keys, nesting) up to about this many times the trace's size.
WORKER_BASE_BYTES = 200 << 20
WORKER_BYTES_PER_TRACE_BYTE = 2

Progress = Callable[[int, int, str], None]

INGEST_SCRATCH_PREFIX = "kinetoscope-ingest-"  # + pid + "-...": the scratch folder of one ingest


@dataclass(frozen=True)
class IngestOptions:
    """How to ingest.

    ``run`` names the profile tree in the dataset (default: its directory name); ``jobs`` is
    the number of worker processes (0: one per CPU, used only when the traces are large
    enough); ``batch_size`` is how many events are decoded at once; ``spool_bytes`` how many
    bytes of rows a session keeps in memory before spilling them to disk; ``force`` re-reads
    sessions even when unchanged.
    ``profile_dir`` and ``out`` are local paths or object-store URLs (``s3://bucket/prefix``);
    ``scheduler`` is the address of a Dask scheduler (``tcp://host:port``) whose workers ingest
    the sessions instead of local processes.
    """

    profile_dir: Path | str
    out: Path | str
    run: str | None = None
    jobs: int = 0
    batch_size: int = DEFAULT_BATCH_SIZE
    spool_bytes: int = DEFAULT_SPOOL_BYTES
    force: bool = False
    scheduler: str | None = None


@dataclass
class IngestReport:
    dataset: Path | str
    run: str
    outcomes: list[SessionOutcome] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # manifest paths outside the dataset, not touched
    damaged: list[str] = field(default_factory=list)  # parts found missing or changed: sessions ingested again
    # The jobs the tree's sessions named, earliest first: (job id, its source, the run it went into).
    jobs: list[tuple[str, str, str]] = field(default_factory=list)

    @property
    def runs(self) -> list[str]:
        """The runs written: ``run``, and one more per later job when the tree held several."""
        return sorted({self.run, *(job[2] for job in self.jobs)})

    @property
    def status(self) -> str:
        statuses = {o.status for o in self.outcomes}
        if FAILED in statuses and statuses == {FAILED} and not self.skipped:
            return FAILED
        return PARTIAL if statuses & {FAILED, PARTIAL} else OK

    @property
    def exit_code(self) -> int:
        return {OK: 0, PARTIAL: 1, FAILED: 2}[self.status]


def default_dataset_location(profile: Path | str) -> Path | str:
    """``default_dataset_path``, or ``<URL>/.kinetoscope/dataset`` for a profile tree on an object store."""
    if is_url(profile):
        return f"{str(profile).rstrip('/')}/.kinetoscope/dataset"
    return default_dataset_path(Path(profile))


def default_dataset_path(profile_dir: Path) -> Path:
    """Where ``ingest`` writes when no ``--out`` is given: ``<profile_dir>/.kinetoscope/dataset``,
    or a per-user cache directory (private: `format.private_dirs`) when the profile tree is not writable.
    A ``.kinetoscope`` link that leads out of the tree is refused (`format.files.in_tree`)."""
    inside = in_tree(profile_dir, profile_dir / ".kinetoscope" / "dataset")
    if os.access(profile_dir, os.W_OK) or inside.exists():
        return inside
    cache = private_dir(user_cache_root())
    digest = hashlib.blake2b(str(profile_dir.resolve()).encode(), digest_size=6).hexdigest()
    return cache / f"{directory.run_name(profile_dir.resolve().name)}-{digest}"


def _salt() -> str:
    """What a session's rows were built with: the schema, the model's ingest-time rules, the release;
    a session ingested under other ones is ingested again."""
    rules = f"{model_collectives.RULES_VERSION}.{device_processes.RULES_VERSION}"
    return f"{SCHEMA_VERSION}/{rules}/{__version__}"


def plan_jobs(
    options: IngestOptions,
    found: list[FoundSession],
    manifest: directory.Manifest,
    runs: JobRuns,
    target: DatasetTarget,
    *,
    damaged: list[str],
) -> tuple[list[SessionJob], list[str]]:
    """The sessions to ingest, and those unchanged (skipped). An unchanged session whose parts are
    missing or damaged is ingested again, and its parts are added to ``damaged``."""
    jobs, skipped = [], []
    for session in found:
        source = session.source
        run = runs.runs[source.session_id]
        key = source.key(run)
        known = manifest.sessions.get(key)
        if known is not None and known.fingerprint == session.fingerprint and not options.force:
            lost = target.damaged_parts(known)
            if not lost:
                skipped.append(key)
                continue
            damaged += [f"{target.name}/{part}: ingesting its session again" for part in lost]
        dataset, fp = target.job_dataset, session.fingerprint
        job = SessionJob(source, run, dataset, key, fp, options.batch_size, options.spool_bytes)
        jobs.append(replace(job, source_url=session.url, dataset_url=target.job_url))
    return jobs, skipped


def workers_for(options: IngestOptions, jobs: list[SessionJob], sizes: dict[str, int]) -> int:
    """The processes for ``jobs``, counted at their own traces (not those of unchanged sessions)."""
    return processes_for(len(jobs), [sizes.get(job.key, 0) for job in jobs], options.jobs)


def processes_for(sessions: int, trace_bytes: list[int], jobs: int = 0) -> int:
    """The processes (this one and workers) that ingest ``sessions`` sessions whose traces have
    these sizes: ``jobs`` where given, else one per CPU, per session, and per the largest trace
    the free memory holds; one alone below ``PARALLEL_MIN_BYTES`` of traces."""
    if sessions < 2:
        return 1
    if jobs:
        return min(jobs, sessions)
    if sum(trace_bytes) < PARALLEL_MIN_BYTES:
        return 1
    return max(1, min(os.cpu_count() or 1, sessions, _workers_that_fit(max(trace_bytes))))


def prestart_workers(trace_bytes: list[int]) -> None:
    """Start now the workers a default ingest of one session per trace of these sizes will take,
    so that they are ready when it begins (``worker.prestart``)."""
    prestart(processes_for(len(trace_bytes), trace_bytes) - 1)


def _workers_that_fit(largest_trace_bytes: int) -> int:
    """How many workers the memory available now holds, each counted for the largest trace."""
    import psutil  # only when the number of workers is chosen here (not with --jobs, nor for small inputs)

    per_worker = WORKER_BASE_BYTES + WORKER_BYTES_PER_TRACE_BYTE * largest_trace_bytes
    return int(psutil.virtual_memory().available // per_worker)


Runner = Callable[[list[SessionJob], Callable[[SessionOutcome], None]], None]


@contextmanager
def _runner(
    options: IngestOptions, jobs: list[SessionJob], sizes: dict[str, int], reading: Reading | None = None
) -> Iterator[Runner]:
    """The seam: the local process pool, or the executor of the cluster at ``options.scheduler``
    (connected to before the dataset is touched, so an unreachable cluster changes nothing)."""
    if options.scheduler and jobs:
        with cluster_executor(options.scheduler) as executor:
            yield lambda todo, done: run_on_executor(executor, todo, done)
        return
    processes = workers_for(options, jobs, sizes)
    yield lambda todo, done: run_local(todo, processes, done, reading)


def _run_jobs(
    run: Runner, jobs: list[SessionJob], sizes: dict[str, int], progress: Progress | None
) -> list[SessionOutcome]:
    jobs = sorted(jobs, key=lambda job: sizes.get(job.key, 0), reverse=True)
    outcomes: list[SessionOutcome] = []
    if progress and jobs:
        progress(0, len(jobs), "")  # how many there are, before the first one ends

    def finished(outcome: SessionOutcome) -> None:
        outcomes.append(outcome)
        if progress:
            progress(len(outcomes), len(jobs), outcome.session)

    run(jobs, finished)
    return outcomes


def ingest(options: IngestOptions, progress: Progress | None = None, reading: Reading | None = None) -> IngestReport:
    """Ingest every session under ``options.profile_dir`` into the dataset at ``options.out``.
    ``progress(done, total, session)`` as each session ends (and ``(0, total, "")`` first);
    ``reading(session, read_bytes, size_bytes)`` as a session's trace file is read, where sessions
    are ingested in this process one after another (one session, small ones, ``--jobs 1``)."""
    with scratch_folder(INGEST_SCRATCH_PREFIX) as scratch:
        return _ingest(options, scratch, progress, reading)


def _ingest(options: IngestOptions, scratch: Path, progress: Progress | None, reading: Reading | None) -> IngestReport:
    _drop_outdated_default(options)
    found = find_sessions(options.profile_dir, _salt(), scratch / "profile")
    run = directory.run_name(options.run or tree_name(options.profile_dir))
    runs = assign_runs((f.source for f in found), run)
    target = dataset_target(options.out, scratch / "dataset")
    with target.writing():
        manifest = target.load_manifest()
        damaged: list[str] = []
        jobs, skipped = plan_jobs(options, found, manifest, runs, target, damaged=damaged)
        report = IngestReport(target.name, run, skipped=skipped, refused=list(target.refused), damaged=damaged)
        report.jobs = runs.jobs if len(runs.jobs) > 1 else []
        keys = {f.source.session_id: f.source.key(runs.runs[f.source.session_id]) for f in found}
        sizes = {keys[f.source.session_id]: f.trace_bytes for f in found}
        with _runner(options, jobs, sizes, reading) as runner:
            stale = _stale(manifest, run, set(keys.values()))
            target.begin([job.key for job in jobs] + stale)
            report.removed = _forget_stale(target, manifest, stale, report.refused)
            for job in jobs:
                if job.key in manifest.sessions:
                    report.refused += target.remove_parts(manifest.sessions.pop(job.key).parts)
            report.outcomes = _run_jobs(runner, jobs, sizes, progress)
        for outcome in report.outcomes:
            manifest.sessions[outcome.key] = outcome.record()
        _forget_empty_runs(manifest, run, runs.names)
        target.finish(manifest, runs.names)
        target.commit()
    return report


def _drop_outdated_default(options: IngestOptions) -> None:
    """The default dataset of a profile tree is a cache: one written by another schema version is
    removed, to be ingested again (a dataset named with ``--out`` is the user's, and is refused)."""
    if is_url(str(options.out)) or is_url(str(options.profile_dir)):
        return
    out = Path(options.out)
    if out != default_dataset_path(Path(options.profile_dir)) or not directory.is_dataset(out):
        return
    try:
        version = json.loads((out / directory.MANIFEST).read_text()).get("schema_version")
    except (OSError, ValueError, AttributeError, RecursionError):
        return  # load_manifest reports it
    if version != SCHEMA_VERSION:
        shutil.rmtree(out)


def _stale(manifest: directory.Manifest, run: str, current: set[str]) -> list[str]:
    """Sessions of this tree's runs that the tree no longer holds."""
    return [key for key, record in manifest.sessions.items() if is_run_of_tree(record.run, run) and key not in current]


def _forget_empty_runs(manifest: directory.Manifest, run: str, written: list[str]) -> None:
    """The tree's runs that no session is in any more (a job's sessions removed) leave the list."""
    holding = {record.run for record in manifest.sessions.values()}
    manifest.runs = [r for r in manifest.runs if not is_run_of_tree(r, run) or r in holding or r in written]


def _forget_stale(
    target: DatasetTarget, manifest: directory.Manifest, stale: list[str], refused: list[str]
) -> list[str]:
    """Remove the parts of the sessions (``stale``) that are no longer in the profile tree."""
    for key in stale:
        refused += target.remove_parts(manifest.sessions.pop(key).parts)
    return stale

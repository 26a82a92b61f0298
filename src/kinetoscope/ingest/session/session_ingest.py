"""Ingest of one session directory into its parts of the dataset (runs in a worker process).

A session never takes the others down: whatever can be read is written, what cannot is a
row of the ``warnings`` table, and the outcome says ``ok``, ``partial`` or ``failed``.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa

from kinetoscope._errors import KinetoscopeError
from kinetoscope.dataset import directory
from kinetoscope.dataset.schema import (
    ALLOCATIONS,
    ALLOCATOR_TRACE,
    COUNTERS,
    EVENTS,
    FILES,
    FRAMES,
    KERNELS,
    SEGMENTS,
    SESSIONS,
    TABLES_BY_NAME,
    WARNINGS,
)
from kinetoscope.format.files import regular_file_inside
from kinetoscope.format.kineto.json_head import paused_gc
from kinetoscope.format.kineto.kineto_json import iter_trace_records, read_trace_metadata
from kinetoscope.format.kineto.trace_source import GZIP_LIMITS, GzipLimits, limited_by
from kinetoscope.format.problems import ProblemLog
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti
from kinetoscope.format.session_files.snapshot import load_snapshot
from kinetoscope.ingest.rows import samples
from kinetoscope.ingest.rows.allocations import MemoryEvents, allocation_table, snapshot_files
from kinetoscope.ingest.rows.batch import SessionContext
from kinetoscope.ingest.rows.kernels import kernels_table
from kinetoscope.ingest.rows.nesting import FrameTree
from kinetoscope.ingest.rows.segments import segment_table, trace_table
from kinetoscope.ingest.rows.trace_events import RowSpool, TraceIngest, TraceStats, counter_table, frames_table
from kinetoscope.ingest.session.session_rows import (
    SessionLabels,
    capture_problems,
    files_table,
    session_table,
    warnings_table,
)
from kinetoscope.sessions.sources import SessionSource

OK, PARTIAL, FAILED = "ok", "partial", "failed"
MISSING_TRACE = "missing_trace"
UNREADABLE = "unreadable"
BAD_SNAPSHOT = "bad_snapshot"
SNAPSHOT_RANK = "snapshot_rank"
NOT_A_SESSION_FILE = "not_a_session_file"
# Problem kinds that mean data was lost (the session is then "partial").
LOSSY_KINDS = frozenset(
    {
        "truncated",
        NOT_A_SESSION_FILE,
        "malformed_json",
        "not_an_object",
        "corrupt_compression",
        "bad_field",
        "incomplete_session",
        "dropped_events",
        MISSING_TRACE,
        UNREADABLE,
        "no_trace_events",
        BAD_SNAPSHOT,
        "missing_file",
        "no_metadata",
    }
)


@dataclass(frozen=True)
class SessionJob:
    """Everything a worker needs to ingest one session (picklable)."""

    source: SessionSource
    run: str
    dataset: Path
    key: str
    fingerprint: str
    batch_size: int
    spool_bytes: int
    # Set when the session or the dataset lies on an object store (see ``staged``): their URLs.
    source_url: str = ""
    dataset_url: str = ""
    # How far its gzip trace may expand: the caller's (``trace_source.GZIP_LIMITS``), wherever the job runs.
    gzip_limits: GzipLimits = field(default_factory=GZIP_LIMITS.get)


@dataclass
class SessionOutcome:
    key: str
    run: str
    rank: int
    session: str
    fingerprint: str
    status: str
    parts: list[str] = field(default_factory=list)
    stats: TraceStats = field(default_factory=TraceStats)
    warnings: int = 0
    message: str = ""
    part_checks: dict[str, str] = field(default_factory=dict)  # part -> ``dataset.directory.part_check``

    def record(self) -> directory.SessionRecord:
        fields = (self.run, self.rank, self.session, self.fingerprint, self.parts, self.status, self.part_checks)
        return directory.SessionRecord(*fields)


def ingest_session(job: SessionJob) -> SessionOutcome:
    """The session's parts written, and what became of it. An error nothing here foresaw fails this
    session alone: its outcome and a row of its ``warnings`` part name it, and the parts it wrote stay
    listed (so that the next ingest replaces them)."""
    source = job.source
    outcome = SessionOutcome(job.key, job.run, source.rank, source.session_id, job.fingerprint, OK)
    problems = ProblemLog()
    try:
        with limited_by(job.gzip_limits), paused_gc():  # events hold no cycles: collections would rescan them
            _ingest_session(job, outcome, problems)
    except Exception as exc:  # noqa: BLE001 - one session's failure must not cost the others
        _failed_on(job, outcome, problems, exc)
    _check_parts(job, outcome)
    return outcome


def _check_parts(job: SessionJob, outcome: SessionOutcome) -> None:
    """Each part's size and hash as written, for the manifest (so a later ingest finds it damaged)."""
    for part in outcome.parts:
        try:
            outcome.part_checks[part] = directory.part_check(job.dataset / part)
        except OSError:
            continue


def _failed_on(job: SessionJob, outcome: SessionOutcome, problems: ProblemLog, exc: Exception) -> None:
    outcome.status, outcome.message = FAILED, f"{type(exc).__name__}: {exc}"
    problems.add(str(job.source.path), "session", UNREADABLE, f"session not ingested: {outcome.message}")
    labels = SessionLabels(job.run, job.source.rank, job.source.session_id)
    warnings = directory.part_path(job.dataset, WARNINGS.name, job.run, job.source.rank, job.key)
    outcome.parts = [part for part in outcome.parts if part != warnings.relative_to(job.dataset).as_posix()]
    with contextlib.suppress(Exception):  # the outcome names the failure even where this cannot be written
        _write(job, outcome, WARNINGS.name, warnings_table(labels, problems, job.source.path))
    outcome.warnings = problems.total


def _ingest_session(job: SessionJob, outcome: SessionOutcome, problems: ProblemLog) -> None:
    source = job.source
    labels = SessionLabels(job.run, source.rank, source.session_id)
    capture_problems(source, problems)
    ingest = _ingest_trace(job, problems, outcome)
    _ingest_samples(job, problems, outcome)
    frames, memory = (ingest.frames, ingest.memory) if ingest is not None else (FrameTree(), MemoryEvents())
    _ingest_snapshots(job, problems, outcome, frames, memory)
    if len(frames):
        _write(job, outcome, FRAMES.name, frames_table(frames, _id_base(source)))
        outcome.stats.frames = len(frames)
    kernels = kernels_table(job.run, source.rank, source.session_id, source.path, problems)
    if kernels.num_rows:
        _write(job, outcome, KERNELS.name, kernels)
    _write(job, outcome, FILES.name, files_table(labels, source))
    _write(job, outcome, SESSIONS.name, session_table(labels, source, outcome.stats.events))
    _write(job, outcome, WARNINGS.name, warnings_table(labels, problems, source.path))
    outcome.warnings = problems.total
    if outcome.status == OK and any(kind in LOSSY_KINDS for kind in problems.counts()):
        outcome.status = PARTIAL


def _write(job: SessionJob, outcome: SessionOutcome, table: str, rows: pa.Table) -> None:
    path = directory.part_path(job.dataset, table, job.run, job.source.rank, job.key)
    directory.write_part(path, rows.select(TABLES_BY_NAME[table].file_schema().names))
    outcome.parts.append(path.relative_to(job.dataset).as_posix())


def _context(source: SessionSource, trace: Path) -> SessionContext:
    info = source.info
    if info is not None:  # capture and import record the trace's base time (0 for epoch-µs traces)
        base_ns, pid = info.profiler_base_time_ns, info.identity.pid
    else:
        base_ns, pid = int(read_trace_metadata(trace).get("baseTimeNanoseconds") or 0), 0
    return SessionContext(str(trace), source.rank, source.slot, source.session_id, int(base_ns), int(pid))


def _id_base(source: SessionSource) -> int:
    return SessionContext("", source.rank, source.slot, source.session_id, 0, 0).id_base


def _session_file(session: Path, path: Path, problems: ProblemLog) -> bool:
    """Whether ingest may read ``path``: a regular file of the session itself. A link out of the
    session, a device or a FIFO (``trace.json -> /dev/zero``, ``cpu_util.pb -> ~/.ssh/id_rsa``) is
    never opened; it is named in the warnings table instead."""
    if regular_file_inside(session, path.name) is not None:
        return True
    message = "not a regular file of the session (a link out of it, a device or a FIFO): not read"
    problems.add(path.name, "file", NOT_A_SESSION_FILE, message)
    return False


def _ingest_trace(job: SessionJob, problems: ProblemLog, outcome: SessionOutcome) -> TraceIngest | None:
    trace = job.source.trace_path
    present = trace.exists()
    if not present and ti.memory_only(job.source.info):
        return None  # a flight-recorder dump: its snapshot is the data
    if not present:
        problems.add(layout.TRACE_JSON, "session", MISSING_TRACE, "no trace.json: this session has no events")
    if not present or not _session_file(job.source.path, trace, problems):
        outcome.status = FAILED if not samples.sample_files(job.source.path) else PARTIAL
        return None
    path = directory.part_path(job.dataset, EVENTS.name, job.run, job.source.rank, job.key)
    spool = RowSpool(path.with_name(path.name + ".spool"), job.spool_bytes)
    writer = directory.PartWriter(path, EVENTS.file_schema())
    try:
        ingest = TraceIngest(_context(job.source, trace), problems, spool)
        for batch in iter_trace_records(trace, problems, job.batch_size):
            ingest.add(batch)
            del batch
        others = ingest.finish(writer.write)
    except (KinetoscopeError, OSError, ValueError, pa.ArrowException) as exc:
        writer.abort()
        problems.add(layout.TRACE_JSON, "session", UNREADABLE, f"trace.json could not be ingested: {exc}")
        outcome.status, outcome.message = FAILED, str(exc)
        return None
    finally:
        spool.close()
    writer.close()
    outcome.parts.append(path.relative_to(job.dataset).as_posix())
    outcome.stats = ingest.stats
    for table, rows in others.items():
        if rows.num_rows:
            _write(job, outcome, table, rows)
    return ingest


def _ingest_samples(job: SessionJob, problems: ProblemLog, outcome: SessionOutcome) -> None:
    rows = []
    for path in samples.sample_files(job.source.path):
        if not _session_file(job.source.path, path, problems):
            continue
        try:
            rows.extend(samples.counter_rows(path, problems))
        except OSError as exc:
            problems.add(path.name, "file", UNREADABLE, f"cannot read: {exc}")
    if rows:
        path = directory.part_path(job.dataset, COUNTERS.name, job.run, job.source.rank, job.key + "-samples")
        directory.write_part(path, counter_table(rows, job.source.session_id))
        outcome.parts.append(path.relative_to(job.dataset).as_posix())
        outcome.stats.counters += len(rows)


def _ingest_snapshots(
    job: SessionJob, problems: ProblemLog, outcome: SessionOutcome, frames: FrameTree, memory: MemoryEvents
) -> None:
    parts = []
    state: dict[str, list[pa.Table]] = {SEGMENTS.name: [], ALLOCATOR_TRACE.name: []}
    for path in snapshot_files(job.source.path):
        if not _session_file(job.source.path, path, problems):
            continue
        claimed = layout.snapshot_rank(path.name)
        if claimed is not None and claimed != job.source.rank:
            rank = job.source.rank
            problems.add(path.name, "file", SNAPSHOT_RANK, f"named for rank {claimed} in a session of rank {rank}")
        try:
            snapshot = load_snapshot(path)
            session, base = job.source.session_id, _id_base(job.source)
            parts.append(allocation_table(path, session, frames, memory, base, snapshot=snapshot))
        except KinetoscopeError as exc:
            problems.add(path.name, "file", BAD_SNAPSHOT, f"memory snapshot not ingested: {exc}")
            continue
        for table, rows in _segment_parts(job, problems, path.name, snapshot, frames):
            state[table].append(rows)
    if parts:
        rows = pa.concat_tables(parts)
        _write(job, outcome, ALLOCATIONS.name, rows)
    for table, found in state.items():
        if found and (rows := pa.concat_tables(found)).num_rows:
            _write(job, outcome, table, rows)


def _segment_parts(
    job: SessionJob, problems: ProblemLog, name: str, snapshot: dict[str, Any], frames: FrameTree
) -> list[tuple[str, pa.Table]]:
    """The snapshot's segments and trace entries (a snapshot whose segments cannot be placed keeps its
    allocations and trace, and says why its segments are missing)."""
    session = job.source.session_id
    parts = [(ALLOCATOR_TRACE.name, trace_table(snapshot, name, session, frames, _id_base(job.source)))]
    try:
        parts.append((SEGMENTS.name, segment_table(snapshot, name, session)))
    except KinetoscopeError as exc:
        problems.add(name, "segments", BAD_SNAPSHOT, f"allocator segments not ingested: {exc}")
    return parts

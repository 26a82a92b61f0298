"""Reading and writing ``trace_info.pb`` (``kinetoscope.v1.TraceInfo``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from google.protobuf.message import DecodeError

from kinetoscope._errors import FormatError
from kinetoscope.format._proto import trace_info_pb2 as pb
from kinetoscope.format.files import atomic_write_bytes, sha256_of
from kinetoscope.format.perfetto_packets.perfetto import FORMAT_MAJOR, FORMAT_MINOR, FileHeader
from kinetoscope.format.problems import ProblemLog
from kinetoscope.format.session_files.session_dir import PARTIAL_SUFFIX, TEMP_SUFFIX, TRACE_INFO

TraceInfo = pb.TraceInfo
SessionState = pb.SessionState
Mode = pb.Mode
ClockSnapshot = pb.ClockSnapshot
FileEntry = pb.FileEntry
ModeOutcome = pb.ModeOutcome
Identity = pb.Identity
MemorySnapshot = pb.MemorySnapshot
CompiledKernels = pb.CompiledKernels


def new_trace_info() -> pb.TraceInfo:
    info = pb.TraceInfo()
    info.format_major = FORMAT_MAJOR
    info.format_minor = FORMAT_MINOR
    return info


def write_trace_info(session_dir: Path, info: pb.TraceInfo) -> None:
    atomic_write_bytes(session_dir / TRACE_INFO, info.SerializeToString())


def read_trace_info(path: Path) -> pb.TraceInfo:
    """Read a ``trace_info.pb`` file (or the one inside a session directory)."""
    if path.is_dir():
        path = path / TRACE_INFO
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    info = pb.TraceInfo()
    try:
        info.ParseFromString(data)
    except DecodeError as exc:
        raise FormatError(f"{path}: not a TraceInfo message ({len(data)} bytes): {exc}") from exc
    if info.format_major > FORMAT_MAJOR:
        raise FormatError(
            f"{path}: format {info.format_major}.{info.format_minor} is newer than this "
            f"kinetoscope reads ({FORMAT_MAJOR}.x); upgrade kinetoscope"
        )
    return info


def build_manifest(session_dir: Path, known_sha256: dict[str, str] | None = None) -> list[pb.FileEntry]:
    """One entry per finished file of the session (trace_info.pb itself excluded), sorted by name.

    ``known_sha256``: hashes the caller computed while writing files (name -> hex digest), not read again.
    """
    known = known_sha256 or {}
    entries = []
    for path in sorted(session_dir.rglob("*")):
        name = path.relative_to(session_dir).as_posix()
        if not path.is_file() or name == TRACE_INFO or name.endswith((TEMP_SUFFIX, PARTIAL_SUFFIX)):
            continue
        digest = known.get(name) or sha256_of(path)
        entries.append(pb.FileEntry(name=name, size_bytes=path.stat().st_size, sha256=digest))
    return entries


def memory_only(info: pb.TraceInfo | None) -> bool:
    """A session that holds memory snapshots and profiled nothing (a flight-recorder dump): no trace is due."""
    return info is not None and bool(info.memory_snapshots) and not info.config.modes and not info.import_source.path


def snapshot_triggers(info: pb.TraceInfo) -> list[str]:
    """What set off each of the session's snapshots (empty for ``export_snapshot``'s)."""
    return [s.trigger for s in info.memory_snapshots if s.trigger]


def state_name(state: int) -> str:
    """The state's name (``COMPLETE``); a number this kinetoscope does not know reads ``UNKNOWN(99)``."""
    return _enum_name(pb.SessionState, state, "SESSION_STATE_")


def mode_name(mode: int) -> str:
    """The mode's name (``CUDA``); a number this kinetoscope does not know reads ``UNKNOWN(99)``."""
    return _enum_name(pb.Mode, mode, "MODE_")


def _enum_name(enum: Any, value: int, prefix: str) -> str:
    """A file may hold any number in an enum field (a newer writer, or damage): never an error."""
    try:
        return str(enum.Name(value)).removeprefix(prefix)
    except ValueError:
        return f"UNKNOWN({value})"


# The reason a light import's device and runtime modes give for writing no packet file: nothing
# is missing (``trace.json`` holds those events), so readers report no loss for it.
LIGHT_IMPORT_REASON = (
    "left out by a light import (trace.json holds the events); `kinetoscope import --pb SESSION` writes it"
)


def reports_a_loss(reason: str) -> bool:
    """Whether a mode's reason for writing no file means something is missing (a light import's does not)."""
    return bool(reason) and reason != LIGHT_IMPORT_REASON


def file_header(identity: pb.Identity, file_kind: str, extra: dict[str, str] | None = None) -> FileHeader:
    """The first-packet header of a session's packet file, from the session's identity."""
    return FileHeader(
        file_kind=file_kind,
        session_id=identity.session_id,
        instance_id=identity.instance_id,
        hostname=identity.hostname,
        pid=identity.pid,
        rank=identity.rank,
        local_rank=identity.local_rank,
        world_size=identity.world_size,
        backend=identity.backend,
        extra=dict(extra or {}),
    )


def record_skipped(info: Any, problems: ProblemLog) -> None:
    """Put the problems met reading a trace into a ``TraceInfo``: a count and an example per kind."""
    del info.skipped_events[:]
    examples: dict[str, str] = {}
    for problem in problems.records:
        examples.setdefault(problem.kind, str(problem))
    for kind, count in sorted(problems.counts().items()):
        info.skipped_events.add(reason=kind, count=count, example=examples.get(kind, ""))

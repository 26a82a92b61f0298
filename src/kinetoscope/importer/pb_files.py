"""The packet files of a light session, written later (``kinetoscope import --pb SESSION``).

A light session (``light_session``) holds ``trace.json`` and a ``trace_info.pb`` that already
records everything the conversion needs: the identity, the profiler's base time and window
and the start. The conversion reads ``trace.json`` with those, exactly as the import that
writes the files at once does (the bytes are the same), into a staging folder beside the
session; the files are then moved in, and ``trace_info.pb`` is rewritten with their modes,
counts and manifest entries.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kinetoscope._errors import FormatError
from kinetoscope.convert import conversion
from kinetoscope.convert import session_traces as st
from kinetoscope.format.kineto import kineto_json
from kinetoscope.format.perfetto_packets.packet_files import SessionPacketFiles
from kinetoscope.format.perfetto_packets.perfetto import CLOCK_REALTIME
from kinetoscope.format.problems import ProblemLog
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti
from kinetoscope.importer import light_session as light
from kinetoscope.importer import trace_import as imp

# Why a light session whose trace changed gets no packet files (its trace.json may be a hard link).
_CHANGED = "the trace changed since it was imported (a hard link shares its source's bytes); import it again"


@dataclass
class PacketFilesResult:
    """What ``write_pb_files`` did to one session (``stats`` None: it had its files already)."""

    session: Path
    stats: conversion.ConversionStats | None
    problems: ProblemLog


def write_pb_files(session: Path, batch_size: int = imp.IMPORT_BATCH_SIZE) -> PacketFilesResult:
    """Write ``ntrace.pb`` and ``device_<N>.pb`` of a light session and record them in its
    ``trace_info.pb``; a session that has them is left as it is. Raises ``FormatError`` for a
    session that is not an imported one (a capture writes its files itself)."""
    info = ti.read_trace_info(session)
    if not info.import_source.path:
        raise FormatError(f"{session}: not an imported session (a capture writes its own packet files)")
    if not light.is_light(info):
        return PacketFilesResult(session, None, ProblemLog())
    trace = session / layout.TRACE_JSON
    listed = next((entry for entry in info.files if entry.name == layout.TRACE_JSON), None)
    if listed is None or not trace.is_file():
        raise FormatError(f"{trace}: missing; the session's packet files are made from it")
    if trace.stat().st_size != listed.size_bytes:
        raise FormatError(f"{trace}: {trace.stat().st_size} bytes, {listed.size_bytes} in the manifest: {_CHANGED}")
    imp.remove_dead_staging(session.parent)
    staging = session.parent / f"{imp.STAGING_PREFIX}{os.getpid()}-pb-{session.name}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir()
    try:
        stats, problems, sha256 = _convert(trace, staging, info, batch_size)
        if sha256 != listed.sha256:
            raise FormatError(f"{trace}: SHA-256 differs from the manifest: {_CHANGED}")
        for name in stats.files:
            os.replace(staging / name, session / name)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    _record(session, info, stats, problems)
    return PacketFilesResult(session, stats, problems)


def _convert(
    trace: Path, staging: Path, info: Any, batch_size: int
) -> tuple[conversion.ConversionStats, ProblemLog, str]:
    """The import's conversion, with what ``info`` recorded of the trace when it was imported, and
    the SHA-256 of the trace it read."""
    start_ns, stop_ns = info.start_clocks.realtime_ns, info.stop_clocks.realtime_ns
    # An import records the profiler's stop only where the trace has a window, which it starts at.
    window_ns = (start_ns, stop_ns) if stop_ns else None
    options = conversion.ConvertOptions(
        base_ns=info.profiler_base_time_ns, session_id=info.identity.session_id, window_ns=window_ns
    )
    files = SessionPacketFiles(staging, imp.packet_header(info.identity), {CLOCK_REALTIME: start_ns})
    label, problems, hasher = info.import_source.path, ProblemLog(), hashlib.sha256()
    stats = st.convert(
        lambda log: kineto_json.iter_trace_records(trace, log, batch_size, label=label, hasher=hasher),
        files,
        options,
        problems,
        label,
    )
    return stats, problems, hasher.hexdigest()


def _record(session: Path, info: Any, stats: conversion.ConversionStats, problems: ProblemLog) -> None:
    known = {entry.name: entry.sha256 for entry in info.files if entry.name == layout.TRACE_JSON}
    copying = {s.reason: (s.count, s.example) for s in info.skipped_events}  # what the light import met
    del info.modes[:]
    del info.files[:]
    conversion.record_conversion(info, stats, problems)
    merged = {s.reason: (s.count, s.example) for s in info.skipped_events}
    for reason, (count, example) in copying.items():  # an import that converts at once counts both together
        more, other = merged.get(reason, (0, ""))
        merged[reason] = (count + more, example or other)
    del info.skipped_events[:]
    for reason, (count, example) in sorted(merged.items()):
        info.skipped_events.add(reason=reason, count=count, example=example)
    imp.seal(session, info, stats, known)

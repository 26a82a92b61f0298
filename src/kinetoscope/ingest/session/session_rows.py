"""Rows of the small tables (``sessions``, ``files``, ``warnings``) for one session."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from kinetoscope.dataset.schema import FILES, SESSIONS, WARNINGS
from kinetoscope.format.files import inside
from kinetoscope.format.kineto.kineto_json import read_trace_metadata
from kinetoscope.format.problems import ProblemLog
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti
from kinetoscope.sessions.file_status import OUTSIDE, OUTSIDE_MESSAGE, file_status
from kinetoscope.sessions.sources import SessionSource

DROPPED_EVENTS = "dropped_events"
CAPTURE_WARNING = "capture_warning"
MODE_OUTCOME = "mode_outcome"
INCOMPLETE_SESSION = "incomplete_session"
NO_METADATA = "no_metadata"
MISSING_FILE = "missing_file"
RANK_NUMBERED = "rank_numbered"
# Kinds that inform rather than report a loss or a doubt (``severity`` note in ``warnings``).
NOTE_KINDS = frozenset({MODE_OUTCOME})


@dataclass(frozen=True)
class SessionLabels:
    run: str
    rank: int
    session: str


def session_table(labels: SessionLabels, source: SessionSource, event_count: int) -> pa.Table:
    info = source.info
    ident = info.identity if info is not None else None
    properties = device_properties(source.trace_path)
    row: dict[str, Any] = {
        "run": labels.run,
        "rank": labels.rank,
        "session": labels.session,
        "path": source.location or str(source.path),
        "instance": ident.instance_id if ident else "",
        "host": ident.hostname if ident else "",
        "pid": ident.pid if ident else -1,
        "local_rank": ident.local_rank if ident else -1,
        "world_size": ident.world_size if ident else -1,
        "backend": ident.backend if ident else "",
        "state": ti.state_name(info.state) if info is not None else "UNKNOWN",
        "start_ns": info.start_clocks.realtime_ns if info is not None else -1,
        "stop_ns": info.stop_clocks.realtime_ns if info is not None else -1,
        "modes": ",".join(ti.mode_name(m) for m in info.config.modes) if info is not None else "",
        "torch_version": info.versions.torch if info is not None else "",
        "kinetoscope_version": info.versions.kinetoscope if info is not None else "",
        "device_name": device_name(properties),
        "device_memory": device_memory(properties),
        "slot": source.slot,
        "event_count": event_count,
        "dropped_events": sum(d.total - d.kept for d in info.drops) if info is not None else 0,
    }
    return pa.Table.from_pylist([row], schema=SESSIONS.full_schema())


def device_properties(trace: Path) -> list[dict[str, Any]]:
    """The trace's ``deviceProperties`` entries; none when the trace is missing or records none."""
    if not trace.exists():
        return []
    try:
        properties = read_trace_metadata(trace).get("deviceProperties")
    except (OSError, ValueError):  # ingest reports a damaged trace; the properties are only labels
        return []
    return [p for p in properties if isinstance(p, dict)] if isinstance(properties, list) else []


def device_name(properties: list[dict[str, Any]]) -> str:
    """The distinct ``deviceProperties`` names, comma separated (what the roofline picks its peaks by)."""
    names = [str(p.get("name", "")) for p in properties]
    return ", ".join(dict.fromkeys(n for n in names if n))


def device_memory(properties: list[dict[str, Any]]) -> str:
    """Each device's ``totalGlobalMem`` by its ``id``, as a JSON object (``{"0": 34089730048}``); entries
    without an integral id or a positive size are left out."""
    sizes = {}
    for entry in properties:
        device, size = entry.get("id"), entry.get("totalGlobalMem")
        if isinstance(device, int) and isinstance(size, int) and not isinstance(size, bool) and size > 0:
            sizes[str(device)] = size
    return json.dumps(sizes, separators=(",", ":"))


def files_table(labels: SessionLabels, source: SessionSource) -> pa.Table:
    rows = []
    listed = set()
    entries = list(source.info.files) if source.info is not None else []
    for entry in entries:
        status, size = file_status(source.path, entry.name, entry.size_bytes)
        listed.add(entry.name)
        rows.append(_file_row(labels, entry.name, size, entry.sha256, status))
    for path in sorted(p for p in source.path.rglob("*") if p.is_file()):
        name = path.relative_to(source.path).as_posix()
        if name in listed or name == layout.TRACE_INFO:
            continue
        if inside(source.path, name) is None:  # a link out of the session: named, not measured
            rows.append(_file_row(labels, name, -1, "", OUTSIDE))
            continue
        status = "partial" if name.endswith(layout.PARTIAL_SUFFIX) else "ok"
        rows.append(_file_row(labels, name, path.stat().st_size, "", status))
    return pa.Table.from_pylist(rows, schema=FILES.full_schema())


def _file_row(labels: SessionLabels, name: str, size: int, sha: str, status: str) -> dict[str, Any]:
    return {
        "run": labels.run,
        "rank": labels.rank,
        "session": labels.session,
        "name": name,
        "size_bytes": size,
        "sha256": sha,
        "status": status,
    }


def capture_problems(source: SessionSource, problems: ProblemLog) -> None:
    """What the capture itself recorded as lost or doubtful, added to ``problems``."""
    info = source.info
    if source.rank_note:
        problems.add(layout.TRACE_INFO, "identity", RANK_NUMBERED, source.rank_note)
    if info is None:
        problems.add(layout.TRACE_INFO, "session", NO_METADATA, source.info_problem or "trace_info.pb unreadable")
        return
    if info.state != ti.SessionState.SESSION_STATE_COMPLETE:
        reason = info.error or "the process stopped before export finished"
        problems.add(
            layout.TRACE_INFO, "session", INCOMPLETE_SESSION, f"session state {ti.state_name(info.state)}: {reason}"
        )
    for drop in info.drops:
        if drop.total > drop.kept:
            message = (
                f"device {drop.device}: {drop.total - drop.kept} events dropped at capture (kept {drop.kept} "
                f"of {drop.total}); raise max_events_per_device, shorten the profiled window or filter devices"
            )
            problems.add(layout.device_trace_name(drop.device), "capture", DROPPED_EVENTS, message)
    for warning in info.warnings:
        problems.add(layout.TRACE_INFO, "capture", CAPTURE_WARNING, warning)
    for outcome in info.modes:
        if ti.reports_a_loss(outcome.reason):
            problems.add(layout.TRACE_INFO, "capture", MODE_OUTCOME, f"{ti.mode_name(outcome.mode)}: {outcome.reason}")
    _missing_files(source, problems)


def _missing_files(source: SessionSource, problems: ProblemLog) -> None:
    """Files of the manifest that are gone: their data is lost, so each is named."""
    for entry in source.info.files:
        status, _ = file_status(source.path, entry.name, entry.size_bytes)
        if status == "missing":
            message = f"listed in the manifest ({entry.size_bytes} bytes) but missing: its data is not in the dataset"
            problems.add(entry.name, "session", MISSING_FILE, message)
        elif status == OUTSIDE:
            problems.add(entry.name, "session", MISSING_FILE, OUTSIDE_MESSAGE)


def warnings_table(labels: SessionLabels, problems: ProblemLog, session_dir: Path) -> pa.Table:
    """One row per kept problem record, plus one per kind whose extra records were not kept."""
    rows = []
    for record in problems.records:
        rows.append(
            _warning_row(
                labels, _relative(record.file, session_dir), record.where, record.kind, record.message, count=1
            )
        )
    kept: dict[str, int] = {}
    for record in problems.records:
        kept[record.kind] = kept.get(record.kind, 0) + 1
    for kind, count in sorted(problems.counts().items()):
        extra = count - kept.get(kind, 0)
        if extra > 0:
            rows.append(_warning_row(labels, "", "", kind, f"{extra} more of this kind (not listed)", count=extra))
    return pa.Table.from_pylist(rows, schema=WARNINGS.full_schema())


def _relative(file: str, session_dir: Path) -> str:
    path = Path(file)
    try:
        return path.relative_to(session_dir).as_posix()
    except ValueError:
        return file


def _warning_row(
    labels: SessionLabels, file: str, where: str, kind: str, message: str, *, count: int
) -> dict[str, Any]:
    return {
        "run": labels.run,
        "rank": labels.rank,
        "session": labels.session,
        "file": file,
        "where": where,
        "kind": kind,
        "severity": "note" if kind in NOTE_KINDS else "warning",
        "message": message,
        "count": count,
    }

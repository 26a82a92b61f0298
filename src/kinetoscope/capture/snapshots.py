"""``export_snapshot``: write the recorded memory history into this process's latest session.

The snapshot lands next to ``trace.json`` and ``ntrace.pb``, is listed in the session's
``trace_info.pb`` (a ``MemorySnapshot`` entry and the manifest), and the session is sealed
again. Its name should carry the rank (``memory_snapshot_rank<N>.pickle``); in a
multi-rank run a name without a ``rank<N>`` token gets a warning, because readers could
not tell which rank it belongs to.
"""

from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path
from typing import Any

from kinetoscope._errors import ConfigError, SessionError
from kinetoscope.capture import memory
from kinetoscope.capture.session import clock_snapshot
from kinetoscope.format.files import atomic_write_bytes
from kinetoscope.format.perfetto_packets import perfetto as pf
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import snapshot as snap
from kinetoscope.format.session_files import trace_info as ti

_lock = threading.Lock()
_latest_session: Path | None = None


def note_session(path: Path) -> None:
    """Record ``path`` as this process's most recent exported session."""
    global _latest_session
    with _lock:
        _latest_session = path


def latest_session() -> Path | None:
    return _latest_session


def export_snapshot(filename: str | None = None, *, trigger: str = "", session: Path | None = None) -> Path:
    """Write the memory history into ``session`` (by default the latest of this process); return the file's path.

    ``trigger`` says what set the export off (the flight recorder's out-of-memory error or signal).
    """
    session = session if session is not None else latest_session()
    if session is None:
        raise SessionError(
            "export_snapshot: this process has no session yet; call it after the profiled region, "
            "once export_trace has written the session directory"
        )
    info = ti.read_trace_info(session)
    name = _checked_name(filename, info)
    target = session / name
    if target.exists():
        raise SessionError(f"export_snapshot: {target} already exists; pass another file name")
    snapshot, counts, recording = memory.take_snapshot()
    snapshot[snap.METADATA_KEY] = {**_metadata(info, recording, counts), "trigger": trigger}
    atomic_write_bytes(target, snap.dumps_snapshot(snapshot))
    entry = _entry(name, info, snapshot, counts, recording)
    entry.trigger = trigger
    _reseal(session, info, entry)
    return target


def _checked_name(filename: str | None, info: Any) -> str:
    ident = info.identity
    name = filename if filename is not None else layout.snapshot_name(ident.rank)
    problem = layout.snapshot_name_problem(name) if isinstance(name, str) else "expected a string"
    if problem:
        raise ConfigError(f"export_snapshot: bad file name {name!r}: {problem}")
    named_rank = layout.snapshot_rank(name)
    if named_rank is None and ident.world_size > 1:
        warnings.warn(
            f"kinetoscope: snapshot name {name!r} has no rank<N> token, but this is rank {ident.rank} of "
            f"{ident.world_size}; readers could not tell which rank it belongs to. "
            f"Use {layout.snapshot_name(ident.rank)!r}.",
            stacklevel=3,
        )
    elif named_rank is not None and named_rank != ident.rank:
        warnings.warn(
            f"kinetoscope: snapshot name {name!r} says rank {named_rank}, but this process is rank {ident.rank}",
            stacklevel=3,
        )
    return name


def _metadata(info: Any, recording: memory.Recording, counts: memory.SnapshotCounts) -> dict[str, Any]:
    ident = info.identity
    return {
        "format": snap.SNAPSHOT_FORMAT,
        "source": recording.source,
        "device_kind": recording.device_kind,
        "clock": "CLOCK_REALTIME",
        "time_field": "time_us",
        "session_id": ident.session_id,
        "rank": ident.rank,
        "world_size": ident.world_size,
        "pid": ident.pid,
        "hostname": ident.hostname,
        "stacks": recording.stacks,
        "max_entries": recording.max_entries,
        "events_kept": counts.entries,
        "events_total": counts.entries_total,
        "recording_start_realtime_ns": recording.start_clocks_ns.get(pf.CLOCK_REALTIME, 0),
        "recording_start_monotonic_ns": recording.start_clocks_ns.get(pf.CLOCK_MONOTONIC, 0),
        "exported_realtime_ns": pf.read_clocks_ns()[pf.CLOCK_REALTIME],
    }


def _entry(name: str, info: Any, snapshot: dict[str, Any], counts: memory.SnapshotCounts,
           recording: memory.Recording) -> Any:
    summary = snap.summarize(snapshot)
    named_rank = layout.snapshot_rank(name)
    clocks = recording.start_clocks_ns
    entry = ti.MemorySnapshot(
        file=name,
        rank=named_rank if named_rank is not None else info.identity.rank,
        rank_from_name=named_rank is not None,
        device_kind=recording.device_kind,
        source=recording.source,
        entries=counts.entries,
        entries_total=counts.entries_total,
        max_entries=recording.max_entries,
        stacks=recording.stacks,
        first_entry_ns=(summary.first_time_us or 0) * 1000,
        last_entry_ns=(summary.last_time_us or 0) * 1000,
        live_blocks=summary.live_blocks,
        live_bytes=summary.live_bytes,
    )
    entry.recording_start_clocks.realtime_ns = clocks.get(pf.CLOCK_REALTIME, 0)
    entry.recording_start_clocks.monotonic_ns = clocks.get(pf.CLOCK_MONOTONIC, 0)
    entry.recording_start_clocks.boottime_ns = clocks.get(pf.CLOCK_BOOTTIME, 0)
    entry.export_clocks.CopyFrom(clock_snapshot())
    return entry


def _reseal(session: Path, info: Any, entry: Any) -> None:
    """Add the snapshot to trace_info.pb and rebuild the manifest, keeping the session's state."""
    info.memory_snapshots.append(entry)
    del info.files[:]
    info.files.extend(ti.build_manifest(session))
    try:
        ti.write_trace_info(session, info)
    except SessionError:
        os.unlink(session / entry.file)
        raise

"""Light sessions: an imported trace's ``trace.json`` and ``trace_info.pb``, no packet files.

Every reading command (ingest, and through it summary, sql, findings, view, export; verify's
trace checks) reads ``trace.json`` alone; ``ntrace.pb`` and ``device_<N>.pb`` are a second,
binary copy of the same events, for ``dump`` and for opening a session in ui.perfetto.dev. The
raw-trace cache writes light sessions, and so does ``kinetoscope import --no-pb``. Their
``trace_info.pb`` is complete: its manifest lists the files that exist, and its device and
runtime modes list no file, with a reason (``trace_info.LIGHT_IMPORT_REASON``) that readers do
not report: nothing is missing. ``kinetoscope import
--pb SESSION`` writes the packet files later.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti

# The reason a light session's device and runtime modes give for writing no file.
NOT_WRITTEN = ti.LIGHT_IMPORT_REASON
_FICLONE = 0x40049409  # Linux ioctl: share the source's blocks, copy on write (btrfs, XFS, ...)


def link_or_clone(source: Path, target: Path) -> bool:
    """Make ``target`` hold ``source``'s bytes without copying them: a reflink where the file
    system has them, else a hard link; False when neither can be made (another file system)."""
    if clone_file(source, target):
        return True
    try:
        os.link(source, target)
    except OSError:
        return False
    return True


def clone_file(source: Path, target: Path) -> bool:
    try:
        import fcntl
    except ImportError:  # not a POSIX system
        return False
    try:
        with open(source, "rb") as src, open(target, "wb") as dst:
            fcntl.ioctl(dst.fileno(), _FICLONE, src.fileno())
    except OSError:
        with contextlib.suppress(OSError):
            target.unlink()
        return False
    return True


def is_light(info: Any) -> bool:
    """Whether ``info`` is a light session's: an import whose device and runtime modes wrote nothing."""
    outcomes = {outcome.mode: outcome for outcome in info.modes}
    runtime = outcomes.get(ti.Mode.MODE_RUNTIME)
    return bool(info.import_source.path) and runtime is not None and not runtime.files and runtime.reason == NOT_WRITTEN


def seal_light(staging: Path, info: Any, known_sha256: dict[str, str]) -> None:
    """Complete a light session's ``info`` (modes without files, manifest) and write it."""
    for mode in (ti.Mode.MODE_DEVICE, ti.Mode.MODE_RUNTIME):
        info.modes.add(mode=mode, reason=NOT_WRITTEN)
    info.files.extend(ti.build_manifest(staging, known_sha256))
    info.state = ti.SessionState.SESSION_STATE_COMPLETE
    ti.write_trace_info(staging, info)


def packet_files(session: Path) -> list[str]:
    """The system and device trace files present in ``session``."""
    names = (p.name for p in session.iterdir())
    return sorted(n for n in names if n == layout.SYSTEM_TRACE or layout.parse_device_trace_name(n) is not None)

"""The session directory contract: the only module that builds or parses session paths.

Layout::

    <profile_output_dir>/
      <instance-id>_pid_<pid>/          one per process
        <timestamp>/                    one per profiling cycle
          trace.json                    framework trace (torch.profiler's own export)
          trace_info.pb                 session metadata (kinetoscope.v1.TraceInfo)
          ntrace.pb                     system trace (RUNTIME)
          device_<N>.pb                 device trace of device N (DEVICE)
          cpu_util.pb                   host CPU samples (CPU_UTIL)
          host_mem.pb                   host memory samples (HOST_MEMORY)
          memory_snapshot_rank<N>.pickle  memory snapshot (Profiler.export_snapshot)
          kernels/                      compiled kernels (artifact_cache_dir)
            index.json                  kernel name in the trace -> files and cache key
            <cache-key>/<file>          the generated sources and binaries, by cache key

A file still being written carries the ``.partial`` suffix and is renamed when it is
complete, so a crash never leaves a half-written file under its final name.
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from pathlib import Path

TRACE_JSON = "trace.json"
# kinetoscope's own folder in a profile tree or beside traces: its datasets and imported traces.
CACHE_FOLDER = ".kinetoscope"
TRACE_INFO = "trace_info.pb"
SYSTEM_TRACE = "ntrace.pb"
CPU_UTIL = "cpu_util.pb"
HOST_MEMORY = "host_mem.pb"
KERNELS_DIR = "kernels"
KERNEL_INDEX = f"{KERNELS_DIR}/index.json"
SNAPSHOT_SUFFIX = ".pickle"
PARTIAL_SUFFIX = ".partial"
TEMP_SUFFIX = ".tmp"

_PROCESS_DIR_RE = re.compile(r"^(?P<instance>.+)_pid_(?P<pid>\d+)$")
_TIMESTAMP_RE = re.compile(r"^\d{8}T\d{6}\.\d{6}Z_\d{3,}$")
_DEVICE_RE = re.compile(r"^device_(?P<index>\d+)\.pb$")
_SNAPSHOT_RANK_RE = re.compile(r"rank(?P<rank>\d+)")
_UNSAFE_RE = re.compile(r"[^A-Za-z0-9._-]+")
_SAFE_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]*$")


def sanitize_component(text: str) -> str:
    """Make ``text`` safe as one path component (letters, digits, '.', '_', '-')."""
    cleaned = _UNSAFE_RE.sub("-", text).strip(".-")
    return cleaned or "unknown"


def process_dir_name(instance_id: str, pid: int) -> str:
    return f"{sanitize_component(instance_id)}_pid_{pid}"


def timestamp_dir_name(realtime_ns: int, cycle: int) -> str:
    """Sortable, unique within a process: UTC time to the microsecond plus the cycle index."""
    seconds, rem_ns = divmod(realtime_ns, 1_000_000_000)
    stamp = _dt.datetime.fromtimestamp(seconds, tz=_dt.timezone.utc).strftime("%Y%m%dT%H%M%S")
    return f"{stamp}.{rem_ns // 1000:06d}Z_{cycle:03d}"


def session_path(output_dir: Path, instance_id: str, pid: int, realtime_ns: int, cycle: int) -> Path:
    return output_dir / process_dir_name(instance_id, pid) / timestamp_dir_name(realtime_ns, cycle)


def device_trace_name(device_index: int) -> str:
    return f"device_{device_index}.pb"


def parse_device_trace_name(name: str) -> int | None:
    """The device index of a device trace file name, or None if it is not one."""
    match = _DEVICE_RE.match(name)
    return int(match.group("index")) if match else None


def snapshot_rank(name: str) -> int | None:
    """The rank a snapshot file name declares with a ``rank<N>`` token, or None."""
    match = _SNAPSHOT_RANK_RE.search(name)
    return int(match.group("rank")) if match else None


def snapshot_name(rank: int) -> str:
    """The default memory snapshot name of a rank: ``memory_snapshot_rank<N>.pickle``."""
    return f"memory_snapshot_rank{rank}{SNAPSHOT_SUFFIX}"


def snapshot_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a snapshot file name in a session directory, or None if it can."""
    if not _SAFE_NAME_RE.match(name) or name in (TRACE_INFO, TRACE_JSON):
        return "expected a plain file name (letters, digits, '.', '_', '-'), not a path or a session file"
    if not name.endswith(SNAPSHOT_SUFFIX) or name.endswith((PARTIAL_SUFFIX, TEMP_SUFFIX)):
        return f"expected a name ending in {SNAPSHOT_SUFFIX!r}, e.g. {snapshot_name(0)!r}"
    return None


def kernel_file_name(cache_key: str, file_name: str) -> str:
    """Where a compiled kernel's file goes, relative to the session: ``kernels/<cache-key>/<file>``."""
    return f"{KERNELS_DIR}/{sanitize_component(cache_key)}/{sanitize_component(file_name)}"


def partial_name(name: str) -> str:
    return name + PARTIAL_SUFFIX


def temp_path(path: Path) -> Path:
    return path.with_name(path.name + TEMP_SUFFIX)


@dataclass(frozen=True)
class SessionLocation:
    """Where a session directory sits in a profile tree, parsed from its path."""

    path: Path
    instance_id: str
    pid: int
    timestamp: str


def parse_session_path(path: Path) -> SessionLocation | None:
    """Parse ``.../<instance>_pid_<pid>/<timestamp>``; None if the path does not follow the layout."""
    match = _PROCESS_DIR_RE.match(path.parent.name)
    if match is None or not _TIMESTAMP_RE.match(path.name):
        return None
    return SessionLocation(path, match.group("instance"), int(match.group("pid")), path.name)


def find_sessions(root: Path) -> list[Path]:
    """Every session directory under ``root`` (which may itself be one), sorted by path; a session
    reached through a link that leads out of ``root`` is refused (`files.in_tree` raises)."""
    from kinetoscope.format.files import in_tree

    if (root / TRACE_INFO).exists() or parse_session_path(root) is not None:
        return [root]
    found = {info.parent for info in root.rglob(TRACE_INFO)}
    found.update(p for p in root.glob("*_pid_*/*") if p.is_dir() and parse_session_path(p))
    return sorted(in_tree(root, p) for p in found if not in_cache_folder(root, p))


def in_cache_folder(root: Path, path: Path) -> bool:
    """Whether ``path`` lies in a ``.kinetoscope`` folder under ``root`` (datasets and imported
    traces kinetoscope keeps beside a profile, never part of it)."""
    return CACHE_FOLDER in path.relative_to(root).parts


DATASET_MANIFEST = "_dataset.json"  # what makes a folder an ingested dataset (dataset.directory.MANIFEST)


def is_profile(path: Path) -> bool:
    """A dataset, or a folder holding at least one session directory (outside ``.kinetoscope``)."""
    if not path.is_dir():
        return False
    if (path / DATASET_MANIFEST).is_file():
        return True
    return any(not in_cache_folder(path, info) for info in path.rglob(TRACE_INFO))

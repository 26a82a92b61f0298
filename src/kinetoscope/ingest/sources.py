"""The sessions of a profile tree, with the rank each claims and its slot within that rank."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kinetoscope._errors import FormatError
from kinetoscope.format import session_dir as layout
from kinetoscope.format import trace_info as ti
from kinetoscope.format.reader import header_of, iter_trace_packets

UNKNOWN_RANK = -1


@dataclass(frozen=True)
class SessionSource:
    """One session directory as found: its metadata (or why it has none), rank and slot."""

    path: Path
    session_id: str
    rank: int
    slot: int
    info: Any  # TraceInfo, or None when trace_info.pb is missing or unreadable
    info_problem: str = ""

    @property
    def trace_path(self) -> Path:
        return self.path / layout.TRACE_JSON

    def key(self, run: str) -> str:
        """Stable short name of this session within a dataset (used in part file names)."""
        return hashlib.blake2b(f"{run}\x1f{self.session_id}".encode(), digest_size=8).hexdigest()


def read_info(path: Path) -> tuple[Any, str]:
    if not (path / layout.TRACE_INFO).exists():
        return None, f"{path / layout.TRACE_INFO}: missing"
    try:
        return ti.read_trace_info(path), ""
    except FormatError as exc:
        return None, str(exc)


def _rank_from_headers(path: Path) -> int:
    """The rank written in the first packet of any packet file of the session, or UNKNOWN_RANK."""
    for packet_file in sorted(path.glob("*.pb")):
        if packet_file.name == layout.TRACE_INFO:
            continue
        try:
            first = next(iter_trace_packets(packet_file), None)
        except OSError:
            continue
        header = header_of(first) if first is not None else None
        if header is not None:
            return header.rank
    return UNKNOWN_RANK


def _identity(path: Path, info: Any) -> tuple[str, int]:
    if info is not None and info.HasField("identity"):
        return info.identity.session_id or _path_id(path), info.identity.rank
    return _path_id(path), _rank_from_headers(path)


def _path_id(path: Path) -> str:
    location = layout.parse_session_path(path)
    return f"{path.parent.name}/{path.name}" if location is not None else path.name


def discover(profile_dir: Path) -> list[SessionSource]:
    """Every session under ``profile_dir``, ranked; slots number the sessions of one rank by id."""
    found = []
    for path in layout.find_sessions(profile_dir):
        info, problem = read_info(path)
        session_id, rank = _identity(path, info)
        found.append((path, session_id, rank, info, problem))
    by_rank: dict[int, list[tuple[Any, ...]]] = defaultdict(list)
    for item in found:
        by_rank[item[2]].append(item)
    sources = []
    for rank, items in sorted(by_rank.items()):
        for slot, (path, session_id, _, info, problem) in enumerate(sorted(items, key=lambda i: i[1])):
            sources.append(SessionSource(path, session_id, rank, slot, info, problem))
    return sources


def fingerprint(source: SessionSource, salt: str) -> str:
    """Changes whenever a file of the session changes (name, size, mtime) or ``salt`` does."""
    digest = hashlib.blake2b(salt.encode(), digest_size=16)
    digest.update(f"{source.rank}/{source.slot}/{source.session_id}".encode())
    for path in sorted(p for p in source.path.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"\x1f{path.relative_to(source.path)}\x1e{stat.st_size}\x1e{stat.st_mtime_ns}".encode())
    return digest.hexdigest()

"""The sessions of a profile tree, with the rank each claims and its slot within that rank."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kinetoscope._errors import FormatError
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti

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
    # Set when the session recorded no rank and shares the tree with other such processes:
    # says how ``rank`` was numbered instead.
    rank_note: str = ""
    # Where the session lies when that is not ``path`` (an object-store URL; ``path`` is then a local copy).
    location: str = ""

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
    from kinetoscope.format.perfetto_packets.reader import (  # here: sessions with an identity never need it
        header_of,
        iter_trace_packets,
    )

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


def _rank_unknown(info: Any) -> bool:
    return info is not None and info.HasField("identity") and not info.identity.rank_known


def _process(info: Any) -> tuple[str, int]:
    return info.identity.hostname or info.identity.instance_id, info.identity.pid


def _number_unknown_ranks(found: list[SessionSource]) -> list[SessionSource]:
    """Several processes without a recorded rank (traces imported without ``distributedInfo``,
    processes that never joined a process group) would all claim rank 0 and merge into one:
    number them instead, after the known ranks, by (host, pid), and say so."""
    unknown = sorted({_process(s.info) for s in found if _rank_unknown(s.info)})
    if len(unknown) < 2:
        return found
    known = [s.rank for s in found if not _rank_unknown(s.info)]
    first = max(known) + 1 if known else 0
    numbered = {process: first + i for i, process in enumerate(unknown)}
    out = []
    for source in found:
        if not _rank_unknown(source.info):
            out.append(source)
            continue
        rank = numbered[_process(source.info)]
        host = source.info.identity.hostname or "an unnamed host"
        note = (
            f"the session records no rank and {len(unknown)} processes here record none: numbered rank {rank} "
            f"(process {source.info.identity.pid} on {host}; ranks {first}-{first + len(unknown) - 1} by host and pid)"
        )
        out.append(replace(source, rank=rank, rank_note=note))
    return out


def discover(profile_dir: Path) -> list[SessionSource]:
    """Every session under ``profile_dir``, ranked; slots number the sessions of one rank by id."""
    found = []
    for path in layout.find_sessions(profile_dir):
        info, problem = read_info(path)
        session_id, rank = _identity(path, info)
        found.append(SessionSource(path, session_id, rank, 0, info, problem))
    by_rank: dict[int, list[SessionSource]] = defaultdict(list)
    for source in _number_unknown_ranks(found):
        by_rank[source.rank].append(source)
    sources = []
    for _, items in sorted(by_rank.items()):
        for slot, source in enumerate(sorted(items, key=lambda s: s.session_id)):
            sources.append(replace(source, slot=slot))
    return sources


def fingerprint(source: SessionSource, salt: str) -> str:
    """Changes whenever a file of the session changes (name, size, mtime) or ``salt`` does."""
    files = sorted(p for p in source.path.rglob("*") if p.is_file())
    stats = ((path.relative_to(source.path), path.stat()) for path in files)
    return fingerprint_of(source, salt, ((str(name), st.st_size, st.st_mtime_ns) for name, st in stats))


def fingerprint_of(source: SessionSource, salt: str, files: Iterable[tuple[str, int, int]]) -> str:
    """The fingerprint of a session whose files are (relative name, size in bytes, mtime in ns), in order."""
    digest = hashlib.blake2b(salt.encode(), digest_size=16)
    digest.update(f"{source.rank}/{source.slot}/{source.session_id}".encode())
    for name, size_bytes, mtime_ns in files:
        digest.update(f"\x1f{name}\x1e{size_bytes}\x1e{mtime_ns}".encode())
    return digest.hexdigest()

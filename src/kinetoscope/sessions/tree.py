"""The sessions of a profile tree that lies in a local directory or on an object store, each with
its fingerprint (to skip unchanged sessions) and the size of its trace (to plan workers).

A tree on an object store is listed once; only its ``trace_info.pb`` files are copied (to a local
scratch directory) so that sessions are found, ranked and numbered by the same rules as a local tree.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath

import pyarrow.fs as pafs

from kinetoscope._errors import SessionError
from kinetoscope.dataset.storage import Location, StoredFile, is_url, open_location
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.sessions.sources import SessionSource, discover, fingerprint, fingerprint_of

NO_SESSIONS = (
    "no session directories found (expected <instance>_pid_<pid>/<timestamp>/ with trace_info.pb); "
    "for plain torch.profiler traces run `kinetoscope import` first"
)


@dataclass(frozen=True)
class FoundSession:
    source: SessionSource
    fingerprint: str
    trace_bytes: int
    url: str = ""  # the session's URL when it lies on an object store


def tree_name(profile: Path | str) -> str:
    """The default run name: the tree's directory name (or last URL component)."""
    if is_url(profile):
        return PurePosixPath(str(profile).rstrip("/").split("://", 1)[1]).name
    return Path(profile).resolve().name


def find_sessions(profile: Path | str, salt: str, scratch: Path) -> list[FoundSession]:
    """Every session of ``profile``; raises SessionError when there is none."""
    if is_url(profile):
        found = _remote_sessions(open_location(str(profile)), salt, scratch)
    else:
        found = _local_sessions(Path(profile), salt)
    if not found:
        raise SessionError(f"{profile}: {NO_SESSIONS}")
    return found


def _local_sessions(profile_dir: Path, salt: str) -> list[FoundSession]:
    if not profile_dir.is_dir():
        what = "not a directory" if profile_dir.exists() else "no such file or directory"
        raise SessionError(f"{profile_dir}: {what}")
    found = []
    for source in discover(profile_dir):
        trace = source.trace_path
        size = trace.stat().st_size if trace.exists() else 0
        found.append(FoundSession(source, fingerprint(source, salt), size))
    return found


def _remote_sessions(tree: Location, salt: str, scratch: Path) -> list[FoundSession]:
    try:
        files = tree.files()
        if not files and tree.fs.get_file_info(tree.root).type == pafs.FileType.NotFound:
            raise SessionError(f"{tree.url}: no such file or directory (or bucket)")
    except OSError as exc:  # no access, no network
        raise SessionError(f"{tree.url}: cannot list the profile tree: {exc}") from exc
    for stored in files:
        (scratch / stored.relative).parent.mkdir(parents=True, exist_ok=True)
        if PurePosixPath(stored.relative).name == layout.TRACE_INFO:
            tree.download(stored.relative, scratch / stored.relative)
    found = []
    for source in discover(scratch) if files else []:
        relative = source.path.relative_to(scratch).as_posix()
        own = _files_under(files, relative)
        entries = [(name, f.size_bytes, f.mtime_ns) for name, f in own]
        url = tree.url if relative == "." else tree.url_of(relative)
        trace = sum(f.size_bytes for name, f in own if name == layout.TRACE_JSON)
        located = replace(source, location=url)
        found.append(FoundSession(located, fingerprint_of(located, salt, entries), trace, url))
    return found


def _files_under(files: list[StoredFile], relative: str) -> list[tuple[str, StoredFile]]:
    """The files of the session directory ``relative``, named relative to it."""
    if relative == ".":
        return [(f.relative, f) for f in files]
    prefix = relative + "/"
    return [(f.relative[len(prefix) :], f) for f in files if f.relative.startswith(prefix)]

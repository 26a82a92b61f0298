"""Ingest into a local dataset as a transaction: one writer at a time, and an interrupted ingest
detected and repaired by the next one.

- **Lock.** A writer holds an exclusive ``flock`` on ``<dataset>/.ingest.lock`` from reading the
  manifest to writing it; a second ingest (or ``summary`` ingesting first) waits for it, saying
  whom it waits for. The kernel drops the lock when its process dies, however it dies.
- **Journal.** Before it removes or rewrites the parts of any session, the writer records the
  sessions it is about to touch in ``<dataset>/_ingest.journal`` (written whole, atomically); the
  manifest, written last, is the commit; then the journal goes. A journal found by a writer that
  holds the lock is therefore the trace of one that died between the two: the sessions it names
  may have some parts old, some new and some missing, so their parts are removed and they leave
  the manifest. Every other session is as the last committed manifest says; the repairing ingest
  then ingests the named ones again, and the dataset equals a clean ingest.
- Temporary files a killed writer left (``*.tmp``, ``*.spool``) are removed by the repair; readers
  never read them (they read ``*.parquet`` only).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from kinetoscope.dataset import directory
from kinetoscope.format.files import atomic_write_bytes

LOCK_FILE = ".ingest.lock"
JOURNAL = "_ingest.journal"
_LEFTOVER_SUFFIXES = (".tmp", ".spool")
Say = Callable[[str], None]


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


@contextlib.contextmanager
def writer_lock(root: Path, say: Say = _stderr) -> Iterator[None]:
    """Holds the dataset's writer lock while the block runs, waiting for another writer if needed."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / LOCK_FILE, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            say(f"waiting for the ingest that is writing {root} ({holder}) ...")
            fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}\n")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def begin(root: Path, keys: list[str]) -> None:
    """Records the sessions whose parts are about to change (before any of them changes)."""
    atomic_write_bytes(root / JOURNAL, json.dumps({"sessions": sorted(set(keys))}).encode())


def commit(root: Path) -> None:
    """After the manifest is written: the change is complete."""
    (root / JOURNAL).unlink(missing_ok=True)


def interrupted(root: Path) -> list[str]:
    """The sessions an interrupted ingest left in an unknown state ([] when none did); ``["?"]``
    when the journal is damaged or names anything but session keys: then every session's state is
    unknown. A key is only ever used in a file name after `directory.is_session_key` accepted it."""
    try:
        document = json.loads((root / JOURNAL).read_text())
    except FileNotFoundError:
        return []
    except (OSError, ValueError, RecursionError):
        return ["?"]
    keys = document.get("sessions") if isinstance(document, dict) else None
    if not isinstance(keys, list) or not all(isinstance(k, str) and directory.is_session_key(k) for k in keys):
        return ["?"]
    return list(keys)


def repair(root: Path, manifest: directory.Manifest, say: Say = _stderr) -> list[str]:
    """Undoes what an interrupted ingest may have half done (call with the writer lock held):
    the sessions its journal names lose their parts and leave ``manifest`` (saved), so this ingest
    reads them again. Returns the warnings about manifest paths refused."""
    keys = interrupted(root)
    if not keys:
        return []
    if "?" in keys:
        keys = list(manifest.sessions)
    say(f"repairing {root}: the last ingest was interrupted; {len(keys)} session(s) will be ingested again")
    refused: list[str] = []
    for key in keys:
        record = manifest.sessions.pop(key, None)
        if record is not None:
            refused += directory.remove_parts(root, record.parts)
        refused += directory.remove_parts(root, directory.session_parts(root, key))
    for relative in list(directory.files_inside(root)):
        if relative.endswith(_LEFTOVER_SUFFIXES):
            directory.remove_inside(root, relative)
    directory.save_manifest(root, manifest)
    commit(root)
    return refused

"""Whether a process still runs: for files and sockets named after the process that made them."""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path


def process_alive(pid: int) -> bool:
    """True while ``pid`` runs (a process of another user counts as running: it is not ours to clean up)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@contextlib.contextmanager
def scratch_folder(prefix: str) -> Iterator[Path]:
    """A private temporary folder named ``<prefix><pid>-...`` in the system's temporary folder,
    removed on exit; the folders of this prefix left by processes that are gone (killed, so
    their own cleanup never ran) are removed first."""
    remove_dead_scratch(prefix)
    folder = tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-")
    try:
        yield Path(folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def remove_dead_scratch(prefix: str, parent: Path | None = None) -> list[Path]:
    """Remove the ``scratch_folder`` folders of ``prefix`` whose process is gone; only this user's
    own folders, never a link."""
    removed = []
    root = parent or Path(tempfile.gettempdir())
    for path in root.glob(f"{glob.escape(prefix)}*"):
        pid_text = path.name[len(prefix) :].split("-", 1)[0]
        if not pid_text.isdigit() or process_alive(int(pid_text)):
            continue
        try:
            info = path.lstat()
        except OSError:
            continue
        if stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed

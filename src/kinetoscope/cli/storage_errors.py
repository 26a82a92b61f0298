"""What to tell the user when a command cannot write where it was asked to: a full disk, a
read-only file system, no permission. Said in one line, naming the path, instead of a traceback."""

from __future__ import annotations

import errno
import shutil
from pathlib import Path

_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
_READ_ONLY = frozenset({errno.EROFS})
_DENIED = frozenset({errno.EACCES, errno.EPERM})


def storage_message(exc: OSError, output: object = None) -> str | None:
    """The message for a storage error, or None when ``exc`` is some other failure. ``output``:
    where the command writes, named when the error does not say which file it was."""
    path = str(exc.filename if exc.filename is not None else output or "the output folder")
    if exc.errno in _FULL:
        return f"the disk holding {path} is full ({_free_bytes(path)}): free space or write to another folder"
    if exc.errno in _READ_ONLY:
        return f"{path}: read-only file system: write to another folder (--out) or a writable copy"
    if exc.errno in _DENIED:
        return f"{path}: permission denied: write to another folder (--out) or ask for write access"
    return None


def _free_bytes(path: str) -> str:
    for folder in (Path(path), *Path(path).parents):
        try:
            return f"{shutil.disk_usage(folder).free:,} bytes free"
        except OSError:
            continue
    return "free space unknown"

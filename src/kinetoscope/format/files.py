"""Safe file writes (a temporary name, then rename, so no half-written file looks complete), hashes and maps."""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
import stat
from collections.abc import Iterator
from pathlib import Path

from kinetoscope._errors import KinetoscopeError, SessionError
from kinetoscope.format.session_files.session_dir import temp_path

_HASH_CHUNK_BYTES = 1 << 20


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file; raise SessionError on any I/O error."""
    tmp = temp_path(path)
    try:
        with open(tmp, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        discard(tmp)
        raise SessionError(f"cannot write {path}: {exc.strerror or exc}") from exc


def discard(path: Path) -> None:
    """Remove ``path`` if it exists, ignoring errors (cleanup after a failure)."""
    with contextlib.suppress(OSError):
        path.unlink()


def inside(root: Path, name: str) -> Path | None:
    """``root / name`` resolved (links followed) when it stays strictly inside ``root``, else None.

    Every path read from a file (a manifest, a dataset) goes through here before it is opened,
    hashed or removed: an absolute name, ``..`` or a link out of ``root`` gives None.
    """
    base = root.resolve()
    try:
        path = (base / name).resolve()
    except (OSError, RuntimeError, ValueError):  # a link loop, a NUL byte
        return None
    return path if path != base and path.is_relative_to(base) else None


class OutsideTreeError(KinetoscopeError):
    """A link inside a profile tree or dataset leads outside it."""


def in_tree(root: Path, path: Path) -> Path:
    """`path`, a file or folder kinetoscope reads or writes under `root` (a profile tree, a
    session, a dataset), when it stays inside `root` once links are followed; OutsideTreeError
    (naming the link's target) when a link on the way leads out. `root` itself may be a link, and
    `path` need not exist yet. The rule `inside` applies to names read from files, for paths."""
    try:
        name = path.relative_to(root).as_posix()
    except ValueError as exc:
        raise OutsideTreeError(f"{path} is not under {root}") from exc
    if inside(root, name) is None:
        raise OutsideTreeError(f"{path} leads outside {root} (a link to {_target(path)}): refused; remove the link "
                               "or copy what it points to into the tree")
    return path


def _target(path: Path) -> str:
    try:
        return str(path.resolve())
    except (OSError, RuntimeError):
        return "a loop"


def regular_file_inside(root: Path, name: str) -> Path | None:
    """Like `inside`, and only for an existing regular file (no device, FIFO or folder)."""
    path = inside(root, name)
    try:
        return path if path is not None and stat.S_ISREG(path.stat().st_mode) else None
    except OSError:
        return None


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_HASH_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


@contextlib.contextmanager
def mapped(path: Path) -> Iterator[bytes | mmap.mmap]:
    """The bytes of ``path`` mapped read-only (empty bytes for an empty file)."""
    with open(path, "rb") as handle:
        if os.fstat(handle.fileno()).st_size == 0:
            yield b""
            return
        with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
            yield data

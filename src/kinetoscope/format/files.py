"""Safe file writes (a temporary name, then rename, so no half-written file looks complete), hashes and maps."""

from __future__ import annotations

import contextlib
import hashlib
import mmap
import os
from collections.abc import Iterator
from pathlib import Path

from kinetoscope._errors import SessionError
from kinetoscope.format.session_dir import temp_path

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

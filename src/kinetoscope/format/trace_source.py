"""Reading a trace file's bytes in chunks, gunzipping on the fly and reporting damage, never raising."""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable
from contextvars import ContextVar
from pathlib import Path
from typing import Any, BinaryIO

from kinetoscope.format.problems import COMPRESSION, TRUNCATED, ProblemLog

GZIP_MAGIC = b"\x1f\x8b"
DEFAULT_CHUNK_BYTES = 4 << 20

# Who follows the reading of trace files in this context: (the file, its bytes read so far, its
# size in bytes when opened), called after each read of the file as stored (set by ingest for
# the sessions it runs in this process: ``ingest.executors.run_local``).
ReadProgress = Callable[[Path, int, int], None]
READ_PROGRESS: ContextVar[ReadProgress | None] = ContextVar("kinetoscope_read_progress", default=None)


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.read(2) == GZIP_MAGIC


def expanded_size_bytes(path: Path) -> int:
    """About how many bytes the trace at ``path`` holds once gunzipped: its size, or for a gzip
    file the size its trailer records (of the last member, modulo 4 GiB: an estimate)."""
    with open(path, "rb") as handle:
        size_bytes = os.fstat(handle.fileno()).st_size
        if size_bytes < 18 or handle.read(2) != GZIP_MAGIC:
            return size_bytes
        handle.seek(-4, os.SEEK_END)
        return int.from_bytes(handle.read(4), "little")


class TraceSource:
    """Chunks of a file, gunzipped on the fly; damaged or cut compressed data ends it with a problem.

    Decompresses with ``zlib`` directly rather than ``gzip.GzipFile``, which loses the data of a
    whole read call when the stream turns out to be cut short. With ``hasher`` (a ``hashlib``
    object), every byte of the file as stored is fed to it as it is read, so a pass that reads
    the file also hashes it; ``hash_rest`` feeds it what the pass left unread. With ``follow``,
    each read is reported to the context's ``READ_PROGRESS`` (a pass over every event).
    """

    def __init__(self, path: Path, problems: ProblemLog, hasher: Any = None, *, follow: bool = False) -> None:
        self.path = path
        self.problems = problems
        self.hasher = hasher
        self.handle: BinaryIO = open(path, "rb")  # noqa: SIM115 - closed in close()
        self._follow = READ_PROGRESS.get() if follow else None  # a pass over the whole file says how far
        self._size_bytes = os.fstat(self.handle.fileno()).st_size if self._follow is not None else 0
        self.gzip = self.handle.read(2) == GZIP_MAGIC
        self.handle.seek(0)
        self.inflater = _new_inflater()
        self.eof = False
        self.bytes_read = 0  # decompressed bytes handed out so far

    def read(self, size: int = DEFAULT_CHUNK_BYTES) -> bytes:
        if self.eof:
            return b""
        chunk = self._read_gzip(size) if self.gzip else self._read_raw(size)
        self.bytes_read += len(chunk)
        self.eof = self.eof or not chunk
        return chunk

    def _read_raw(self, size: int) -> bytes:
        data = self.handle.read(size)
        if self.hasher is not None:
            self.hasher.update(data)
        if self._follow is not None and data:
            self._follow(self.path, self.handle.tell(), self._size_bytes)
        return data

    def hash_rest(self) -> None:
        """Feed the hasher the bytes of the file not read yet (after the end of the events, or of damaged data)."""
        if self.hasher is not None:
            while self._read_raw(DEFAULT_CHUNK_BYTES):
                pass

    def _read_gzip(self, size: int) -> bytes:
        out = []
        produced = 0
        while produced < size and not self.eof:
            data = self._inflate(self._read_raw(max(size // 4, 1 << 16)))
            out.append(data)
            produced += len(data)
        return b"".join(out)

    def _inflate(self, compressed: bytes) -> bytes:
        if not compressed:
            if not self.inflater.eof:
                self._damaged("the compressed stream is cut short (file truncated?)", TRUNCATED)
            self.eof = True
            return self.inflater.flush() if not self.inflater.eof else b""
        try:
            data = self.inflater.decompress(compressed)
            while self.inflater.eof and self.inflater.unused_data:  # concatenated gzip members
                rest = self.inflater.unused_data
                self.inflater = _new_inflater()
                data += self.inflater.decompress(rest)
        except zlib.error as exc:
            self._damaged(f"the compressed data is damaged: {exc}", COMPRESSION)
            self.eof = True
            return b""
        return data

    def _damaged(self, message: str, kind: str) -> None:
        where = f"byte {self.bytes_read} (decompressed)"
        self.problems.add(str(self.path), where, kind, message)

    def close(self) -> None:
        self.handle.close()


def _new_inflater() -> zlib._Decompress:
    return zlib.decompressobj(16 + zlib.MAX_WBITS)

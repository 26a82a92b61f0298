"""Reading a trace file's bytes in chunks, gunzipping on the fly and reporting damage, never raising."""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from kinetoscope._errors import ConfigError
from kinetoscope.format.problems import COMPRESSION, TOO_LARGE, TRUNCATED, ProblemLog

GZIP_MAGIC = b"\x1f\x8b"
DEFAULT_CHUNK_BYTES = 4 << 20
COMPRESSED_BLOCK_BYTES = 1 << 16  # compressed bytes fed to the inflater at a time

# Bounds on what a gzip trace may expand to (a 1 MB file of deflated blanks expands to 1 GB): at most
# max_ratio times its size as stored, though never less than RATIO_FLOOR_BYTES, and at most max_bytes.
# Real Kineto traces expand 10 to 40 times. The command line raises them from these environment
# variables (``cli.environment``); nothing here reads the environment.
MAX_RATIO_ENV = "KINETOSCOPE_GZIP_MAX_RATIO"
MAX_BYTES_ENV = "KINETOSCOPE_GZIP_MAX_BYTES"
DEFAULT_MAX_RATIO = 200
DEFAULT_MAX_BYTES = 64 << 30
RATIO_FLOOR_BYTES = 64 << 20


@dataclass(frozen=True)
class GzipLimits:
    """How far a gzip trace may expand: ``max_ratio`` times its stored size (at least
    ``RATIO_FLOOR_BYTES``), and at most ``max_bytes``."""

    max_ratio: int = DEFAULT_MAX_RATIO
    max_bytes: int = DEFAULT_MAX_BYTES

    def __post_init__(self) -> None:
        for name, value in (("max_ratio", self.max_ratio), ("max_bytes", self.max_bytes)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"gzip {name}={value!r}: expected a whole number of at least 1")

    def limit_bytes(self, stored_bytes: int) -> int:
        return min(max(self.max_ratio * stored_bytes, RATIO_FLOOR_BYTES), self.max_bytes)


# The limits of the traces read in this context (set by the command line from its environment
# variables, and by ingest for the sessions it runs: ``SessionJob.gzip_limits``).
DEFAULT_LIMITS = GzipLimits()
GZIP_LIMITS: ContextVar[GzipLimits] = ContextVar("kinetoscope_gzip_limits", default=DEFAULT_LIMITS)


@contextlib.contextmanager
def limited_by(limits: GzipLimits) -> Iterator[None]:
    """Traces read while the block runs expand within ``limits``."""
    token = GZIP_LIMITS.set(limits)
    try:
        yield
    finally:
        GZIP_LIMITS.reset(token)


# Who follows the reading of trace files in this context: (the file, its bytes read so far, its
# size in bytes when opened), called after each read of the file as stored (set by ingest for
# the sessions it runs in this process: ``ingest.running.executors.run_local``).
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


def expansion_limit_bytes(stored_bytes: int) -> int:
    """How many bytes a gzip file of ``stored_bytes`` may expand to before reading stops (``GZIP_LIMITS``)."""
    return GZIP_LIMITS.get().limit_bytes(stored_bytes)


class TraceSource:
    """Chunks of a file, gunzipped on the fly; damaged or cut compressed data ends it with a problem.

    Decompresses with ``zlib`` directly rather than ``gzip.GzipFile``, which loses the data of a
    whole read call when the stream turns out to be cut short. With ``hasher`` (a ``hashlib``
    object), every byte of the file as stored is fed to it as it is read, so a pass that reads
    the file also hashes it; ``hash_rest`` feeds it what the pass left unread. With ``follow``,
    each read is reported to the context's ``READ_PROGRESS`` (a pass over every event).

    Bounded whatever the file holds: each read inflates at most the bytes asked for (a few
    compressed bytes can hold a gigabyte), and a stream that expands past ``expansion_limit_bytes``
    ends with a ``TOO_LARGE`` problem that names the environment variables that raise the limit.
    """

    def __init__(self, path: Path, problems: ProblemLog, hasher: Any = None, *, follow: bool = False) -> None:
        self.path = path
        self.problems = problems
        self.hasher = hasher
        self.handle: BinaryIO = open(path, "rb")  # noqa: SIM115 - closed in close()
        self._follow = READ_PROGRESS.get() if follow else None  # a pass over the whole file says how far
        self._size_bytes = os.fstat(self.handle.fileno()).st_size
        self.gzip = self.handle.read(2) == GZIP_MAGIC
        self.handle.seek(0)
        self.inflater = _new_inflater()
        self._pending = b""  # compressed bytes read but not inflated yet
        self.limit_bytes = expansion_limit_bytes(self._size_bytes) if self.gzip else 0
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
            data = self._inflate(size - produced)
            out.append(data)
            produced += len(data)
            if self.bytes_read + produced > self.limit_bytes:
                self._too_large()
        return b"".join(out)

    def _inflate(self, limit: int) -> bytes:
        """At most ``limit`` bytes more of the decompressed stream (b"" with ``eof`` set at its end)."""
        if not self._pending:
            self._pending = self._read_raw(COMPRESSED_BLOCK_BYTES)
        if not self._pending:
            return self._end_of_input(limit)
        if self.inflater.eof:  # concatenated gzip members: the next one starts here
            self.inflater = _new_inflater()
        try:
            data = self.inflater.decompress(self._pending, limit)
        except zlib.error as exc:
            self._damaged(f"the compressed data is damaged: {exc}", COMPRESSION)
            self.eof = True
            return b""
        self._pending = self.inflater.unused_data if self.inflater.eof else self.inflater.unconsumed_tail
        return data

    def _end_of_input(self, limit: int) -> bytes:
        """What the inflater still holds once the file is read; a stream not ended there is cut short."""
        if self.inflater.eof:
            self.eof = True
            return b""
        try:
            data = self.inflater.decompress(b"", limit)
        except zlib.error:  # pragma: no cover - no input, nothing to find damaged
            data = b""
        if data:
            return data
        self._damaged("the compressed stream is cut short (file truncated?)", TRUNCATED)
        self.eof = True
        return self.inflater.flush()

    def _too_large(self) -> None:
        message = (
            f"decompresses to more than {self.limit_bytes:,} bytes ({self._size_bytes:,} bytes as stored): "
            f"reading stopped there (a gzip bomb?); to read it, raise {MAX_RATIO_ENV} (default "
            f"{DEFAULT_MAX_RATIO} times the stored size) or {MAX_BYTES_ENV} (default {DEFAULT_MAX_BYTES:,})"
        )
        self._damaged(message, TOO_LARGE)
        self.eof = True

    def _damaged(self, message: str, kind: str) -> None:
        where = f"byte {self.bytes_read} (decompressed)"
        self.problems.add(str(self.path), where, kind, message)

    def close(self) -> None:
        self.handle.close()


def _new_inflater() -> zlib._Decompress:
    return zlib.decompressobj(16 + zlib.MAX_WBITS)

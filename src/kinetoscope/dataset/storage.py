"""Where a profile tree or a dataset lies when it is not a local path: an object-store URL
(``s3://bucket/prefix``), read and written through pyarrow's file systems.

Credentials, region and endpoint come from the usual AWS settings (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_DEFAULT_REGION``, ``AWS_ENDPOINT_URL`` for an S3-compatible
server), which the AWS SDK inside pyarrow reads itself. Paths inside a location are relative
POSIX paths; one that is absolute or climbs out with ``..`` is refused, since some of them are
read from a manifest that may come from someone else.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow.fs as pafs

from kinetoscope._errors import ConfigError

_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# Bytes copied at once between a local file and the store.
COPY_CHUNK_BYTES = 8 << 20


def is_url(text: str | Path) -> bool:
    """True for ``scheme://...`` (an object store), false for a local path."""
    return isinstance(text, str) and _URL_RE.match(text) is not None


@dataclass(frozen=True)
class StoredFile:
    """A file of a location: its path relative to the location, size and modification time."""

    relative: str
    size_bytes: int
    mtime_ns: int


def safe_relative(relative: str) -> str | None:
    """``relative`` as a normalised relative POSIX path, or None when it is absolute or leaves the location."""
    path = PurePosixPath(relative)
    if not relative or path.is_absolute() or ".." in path.parts or "\\" in relative:
        return None
    return path.as_posix()


@dataclass(frozen=True)
class Location:
    """A directory on an object store (or any pyarrow file system): picklable, so it travels to workers."""

    url: str
    fs: Any  # pyarrow.fs.FileSystem
    root: str

    def path(self, relative: str) -> str:
        safe = safe_relative(relative)
        if safe is None:
            raise ValueError(f"{self.url}: {relative!r} is not a path inside this location")
        return f"{self.root.rstrip('/')}/{safe}" if safe != "." else self.root

    def url_of(self, relative: str) -> str:
        return f"{self.url.rstrip('/')}/{relative}"

    def files(self, relative: str = ".") -> list[StoredFile]:
        """Every file under ``relative`` (recursively), sorted by path; none when it does not exist.
        A key that would not name a path inside (``a/../../b``, possible on an object store) is left out."""
        base = self.path(relative)
        selector = pafs.FileSelector(base, recursive=True, allow_not_found=True)
        found = [
            StoredFile(info.path[len(base) :].lstrip("/"), int(info.size or 0), int(info.mtime_ns or 0))
            for info in self.fs.get_file_info(selector)
            if info.type == pafs.FileType.File
        ]
        return sorted((f for f in found if safe_relative(f.relative) == f.relative), key=lambda f: f.relative)

    def exists(self, relative: str) -> bool:
        return bool(self.fs.get_file_info(self.path(relative)).type == pafs.FileType.File)

    @contextlib.contextmanager
    def _writing(self, relative: str) -> Iterator[Any]:
        """An object store shows an object once it is closed; a local file system needs its
        directories, and a rename to show the file whole."""
        path = self.path(relative)
        if not isinstance(self.fs, pafs.LocalFileSystem):
            with self.fs.open_output_stream(path) as stream:
                yield stream
            return
        self.fs.create_dir(path.rsplit("/", 1)[0], recursive=True)
        with self.fs.open_output_stream(path + ".tmp") as stream:
            yield stream
        self.fs.move(path + ".tmp", path)

    def delete(self, relative: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.delete_file(self.path(relative))

    def download(self, relative: str, target: Path) -> None:
        target.parent.mkdir(parents=True, exist_ok=True)
        with self.fs.open_input_stream(self.path(relative)) as stream, target.open("wb") as out:
            for chunk in _chunks(stream):
                out.write(chunk)

    def upload(self, source: Path, relative: str) -> None:
        with source.open("rb") as local, self._writing(relative) as stream:
            while chunk := local.read(COPY_CHUNK_BYTES):
                stream.write(chunk)

    def download_tree(self, target: Path) -> list[StoredFile]:
        """Copies every file of this location under ``target``; returns what it copied."""
        files = self.files()
        for stored in files:
            self.download(stored.relative, target / stored.relative)
        return files


def _chunks(stream: Any) -> Iterator[bytes]:
    while chunk := stream.read(COPY_CHUNK_BYTES):
        yield bytes(chunk)


def open_location(url: str) -> Location:
    """The file system and root of ``url`` (``s3://bucket/prefix``; settings from the AWS environment)."""
    try:
        fs, root = pafs.FileSystem.from_uri(url)
    except (ValueError, OSError) as exc:
        raise ConfigError(f"{url}: cannot open this location: {exc}") from exc
    return Location(url.rstrip("/"), fs, root.rstrip("/"))

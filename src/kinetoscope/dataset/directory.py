"""The dataset directory: where each table's Parquet parts go, and its ``_dataset.json`` manifest.

Layout::

    DATASET/
      _dataset.json                                  schema version, runs, sessions ingested
      <table>/run=<run>/rank=<rank>/part-<key>.parquet   events, flows, frames, counters, allocations
      <table>/part-<key>.parquet                          sessions, files, warnings, schema

``<key>`` names the session that wrote the part, so re-ingesting one session replaces exactly
its own parts. Parts are written under a temporary name and renamed when complete.

The manifest records each part's size and BLAKE2b hash (``part_checks``) as written: ingest finds a
part damaged or missing since (``damaged_parts``) and ingests its session again. A manifest is read
with every field checked (``load_manifest``): one that is not JSON, nested deeper than Python
parses, or holds a field of the wrong type is a FormatError naming the file and the field.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from kinetoscope._errors import FormatError
from kinetoscope._version import __version__
from kinetoscope.dataset.schema import SCHEMA, SCHEMA_VERSION, TABLES_BY_NAME, schema_table
from kinetoscope.format.files import atomic_write_bytes, inside
from kinetoscope.format.session_files.session_dir import DATASET_MANIFEST

MANIFEST = DATASET_MANIFEST  # format.session_files.session_dir.is_profile knows it too
COMPRESSION = "lz4"  # Parquet's LZ4_RAW
# Columns of mostly distinct values, where a dictionary page only costs time.
PLAIN_COLUMNS = frozenset({"args"})
_RUN_UNSAFE_RE = re.compile(r"[^A-Za-z0-9._-]+")
# A session's key (``sessions.sources.Session.key``): 16 lower-case hex digits. A key read back from a
# file (the journal, a manifest) is used in a file name only when it has this form.
SESSION_KEY_RE = re.compile(r"[0-9a-f]{16}")


def run_name(text: str) -> str:
    """A run name safe in a partition directory name."""
    return _RUN_UNSAFE_RE.sub("-", text).strip(".-") or "run"


@dataclass
class SessionRecord:
    """What the manifest remembers of one ingested session."""

    run: str
    rank: int
    session: str
    fingerprint: str
    parts: list[str]
    status: str
    # part -> "<size in bytes>:<BLAKE2b-128 hex>" as written (absent in manifests of older versions)
    part_checks: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Manifest:
    schema_version: int = SCHEMA_VERSION
    runs: list[str] = field(default_factory=list)
    created_by: str = f"kinetoscope {__version__}"
    sessions: dict[str, SessionRecord] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "runs": sorted(self.runs),
            "created_by": self.created_by,
            "sessions": {key: record.to_json() for key, record in sorted(self.sessions.items())},
        }

    def ranks(self, run: str | None = None) -> list[tuple[str, int]]:
        """The (run, rank) pairs of the sessions, sorted (only ``run``'s when given)."""
        keys = {(record.run, record.rank) for record in self.sessions.values()}
        return sorted(key for key in keys if run is None or key[0] == run)


def is_dataset(path: Path) -> bool:
    return (path / MANIFEST).is_file()


def load_manifest(dataset: Path, shown_as: str | None = None) -> Manifest:
    """The manifest of ``dataset`` (an empty one where there is none); errors name it ``shown_as``
    where given (the URL of a manifest downloaded from an object store, not its local copy)."""
    try:
        return _load_manifest(dataset)
    except FormatError as exc:
        if shown_as is None:
            raise
        raise FormatError(str(exc).replace(str(dataset / MANIFEST), shown_as, 1)) from exc


def _load_manifest(dataset: Path) -> Manifest:
    path = dataset / MANIFEST
    if not path.exists():
        return Manifest()
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise FormatError(f"{path}: not a kinetoscope dataset manifest: {_short(exc)}") from exc
    try:
        manifest = _manifest(data)
    except _FieldError as exc:
        raise FormatError(f"{path}: not a kinetoscope dataset manifest: {exc}") from exc
    if manifest.schema_version != SCHEMA_VERSION:
        raise FormatError(
            f"{path}: dataset schema version {manifest.schema_version}, this kinetoscope writes {SCHEMA_VERSION}; "
            "ingest again into a new directory (or delete this one)"
        )
    return manifest


class _FieldError(Exception):
    """A manifest field of the wrong type (its place and what it holds)."""


def _short(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested deeper than it can be read"
    return str(exc)[:200]


def _field(holder: dict[str, Any], name: str, kind: type, where: str, default: Any = None) -> Any:
    value = holder.get(name, default)
    if value is None or isinstance(value, bool) or not isinstance(value, kind):
        shown = repr(value)[:60]
        raise _FieldError(f"{where}{name} is {shown}, not {'an' if kind is int else 'a'} {kind.__name__}")
    return value


def _strings(value: Any, where: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise _FieldError(f"{where} must be a list of strings")
    return value


def _manifest(data: Any) -> Manifest:
    if not isinstance(data, dict):
        raise _FieldError(f"expected an object, found {type(data).__name__}")
    version = _field(data, "schema_version", int, "")
    runs = _strings(data.get("runs", []), "runs")
    created_by = _field(data, "created_by", str, "", "")
    sessions = _field(data, "sessions", dict, "", {})
    records = {}
    for key, value in sessions.items():
        if not isinstance(value, dict):
            raise _FieldError(f"sessions[{key!r}] is {type(value).__name__}, not an object")
        records[key] = _session_record(value, f"sessions[{key!r}].")
    return Manifest(version, list(runs), created_by, records)


def _session_record(value: dict[str, Any], where: str) -> SessionRecord:
    checks = _field(value, "part_checks", dict, where, {})
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in checks.items()):
        raise _FieldError(f"{where}part_checks must map paths to strings")
    return SessionRecord(
        run=_field(value, "run", str, where),
        rank=_field(value, "rank", int, where),
        session=_field(value, "session", str, where),
        fingerprint=_field(value, "fingerprint", str, where),
        parts=_strings(value.get("parts"), f"{where}parts"),
        status=_field(value, "status", str, where),
        part_checks=dict(checks),
    )


def save_manifest(dataset: Path, manifest: Manifest) -> None:
    atomic_write_bytes(dataset / MANIFEST, json.dumps(manifest.to_json(), indent=1).encode())


def part_path(dataset: Path, table: str, run: str, rank: int, key: str) -> Path:
    """Where a session's part of ``table`` goes."""
    if TABLES_BY_NAME[table].partitioned:
        return dataset / table / f"run={run}" / f"rank={rank}" / f"part-{key}.parquet"
    return dataset / table / f"part-{key}.parquet"


def write_options(schema: pa.Schema) -> dict[str, Any]:
    """Parquet options: lz4; integers delta-encoded (ids and times mostly grow by small steps),
    strings dictionary-encoded except ``PLAIN_COLUMNS``; min/max statistics for every column but
    the strings.

    Against zstd with dictionaries everywhere (Parquet's default), events files of generated and
    real traces are 35-45% smaller and written about 35% faster: dictionaries of ids and
    timestamps overflow and fall back to plain pages after costing their hashing. lz4 instead of
    zstd, and no statistics of the strings (the min and max of each row group's ``args`` text,
    names and categories: nothing reads them), write the events of HTA's df_index_resolver
    (151,388 rows) in about 0.15 s of CPU instead of 0.2 s and read them a little faster; the
    file is 3.9 MB instead of 2.4 MB.
    """
    ints = [f.name for f in schema if pa.types.is_integer(f.type)]
    dictionary = [f.name for f in schema if f.name not in ints and f.name not in PLAIN_COLUMNS]
    encoding = dict.fromkeys(ints, "DELTA_BINARY_PACKED")
    statistics = [f.name for f in schema if not _is_text(f.type)]
    return {
        "compression": COMPRESSION,
        "use_dictionary": dictionary,
        "column_encoding": encoding,
        "write_statistics": statistics,
    }


def _is_text(kind: pa.DataType) -> bool:
    """A string or binary column, plain or dictionary-encoded."""
    if pa.types.is_dictionary(kind):
        kind = kind.value_type
    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind))


def write_part(path: Path, table: pa.Table) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    pq.write_table(table, tmp, **write_options(table.schema))
    os.replace(tmp, path)


class PartWriter:
    """A part written batch by batch (for tables too large to hold), renamed into place on close."""

    def __init__(self, path: Path, schema: pa.Schema) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._tmp = path.with_name(path.name + ".tmp")
        self._writer = pq.ParquetWriter(self._tmp, schema, **write_options(schema))
        self.rows = 0

    def write(self, batch: pa.RecordBatch) -> None:
        self._writer.write_batch(batch)
        self.rows += batch.num_rows

    def close(self) -> None:
        self._writer.close()
        os.replace(self._tmp, self.path)

    def abort(self) -> None:
        self._writer.close()
        self._tmp.unlink(missing_ok=True)


def is_session_key(text: str) -> bool:
    return SESSION_KEY_RE.fullmatch(text) is not None


def remove_inside(dataset: Path, relative: str) -> bool:
    """The one remover of files in a dataset: unlinks ``dataset / relative`` only when it is a
    regular file (not a link) whose folder lies inside the dataset; returns whether it was allowed
    (a file already gone is allowed). Names read from files go through here, never straight to unlink."""
    path = inside(dataset, relative)
    if path is None:
        return False
    try:
        if not stat.S_ISREG((dataset / relative).lstat().st_mode):
            return False
    except FileNotFoundError:
        return True
    except OSError:
        return False
    path.unlink(missing_ok=True)
    return True


def remove_parts(dataset: Path, parts: list[str]) -> list[str]:
    """Removes a session's parts; returns a warning for each listed path that is not a Parquet part
    inside the dataset (the manifest may come from someone else), which is left untouched."""
    refused = []
    for relative in parts:
        if not relative.endswith(".parquet") or not remove_inside(dataset, relative):
            refused.append(f"{dataset / MANIFEST}: refused to remove {relative!r}: not a part inside the dataset")
    return refused


def files_inside(dataset: Path) -> Iterator[str]:
    """Every file of the dataset, as paths relative to it, without following a link to a folder."""
    for folder, folders, names in os.walk(dataset):
        folders[:] = [name for name in folders if not os.path.islink(os.path.join(folder, name))]
        base = Path(folder).relative_to(dataset)
        yield from ((base / name).as_posix() for name in names)


def session_parts(dataset: Path, key: str) -> list[str]:
    """The parts a session with this key wrote (``part-<key>.parquet``, ``part-<key>-samples.parquet``),
    found in the tables' folders; [] for a string that is not a session key."""
    if not is_session_key(key):
        return []
    names = {f"part-{key}.parquet", f"part-{key}-samples.parquet"}
    found = []
    for table in TABLES_BY_NAME:
        if (dataset / table).is_dir() and not (dataset / table).is_symlink():
            found += [f"{table}/{rel}" for rel in files_inside(dataset / table) if rel.rsplit("/", 1)[-1] in names]
    return sorted(found)


def part_check(path: Path) -> str:
    """``<size in bytes>:<BLAKE2b-128 hex>`` of a part file (about 1 GB/s: a part is read once more)."""
    digest = hashlib.blake2b(digest_size=16)
    size = 0
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    return f"{size}:{digest.hexdigest()}"


def damaged_parts(dataset: Path, record: SessionRecord) -> list[str]:
    """The parts of ``record`` missing or changed since they were written ("<part>: missing",
    "<part>: damaged (...)"); a part the manifest names outside the dataset is left to ``remove_parts``."""
    found = []
    for relative in record.parts:
        path = inside(dataset, relative)
        if path is None:
            continue
        try:
            size = path.stat().st_size
        except OSError:
            found.append(f"{relative}: missing")
            continue
        expected = record.part_checks.get(relative)
        if expected is None:
            continue  # written by a version that recorded no checks
        if size != _size_of(expected) or part_check(path) != expected:
            found.append(f"{relative}: damaged (its size or hash differs from what ingest wrote)")
    return found


def _size_of(check: str) -> int:
    head = check.split(":", 1)[0]
    return int(head) if head.isascii() and head.isdigit() else -1


def write_schema_table(dataset: Path) -> None:
    write_part(dataset / SCHEMA.name / "part-0.parquet", schema_table())


def table_files(dataset: Path, table: str) -> list[Path]:
    return sorted((dataset / table).glob("**/*.parquet"))


def rank_files(dataset: Path, table: str, run: str, rank: int) -> list[Path]:
    """The parts of one (run, rank) of a partitioned table: one folder listed, not the whole table."""
    return sorted((dataset / table / f"run={run}" / f"rank={rank}").glob("*.parquet"))


def load_stored_manifest(local: Path, url: str) -> Manifest:
    """``load_manifest`` of a manifest downloaded into the folder ``local`` from ``url`` (an object
    store's): its errors name ``url``, not the temporary copy."""
    try:
        return load_manifest(local)
    except FormatError as exc:
        raise FormatError(str(exc).replace(str(local / MANIFEST), url)) from exc

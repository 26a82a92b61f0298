"""Where ingest writes a dataset: a local directory, or a prefix on an object store.

Either way sessions write their own parts (see ``staged``) and only the caller writes the manifest,
last and whole: on a local disk by an atomic rename, on an object store as one object (which readers
see entirely or not at all). A dataset on an object store is assembled in a local scratch directory
(manifest, schema table, empty parts) and then uploaded, manifest last.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Protocol

from kinetoscope._errors import ConfigError
from kinetoscope.dataset import directory, transaction
from kinetoscope.dataset.schema import PARTITIONED
from kinetoscope.dataset.storage import Location, is_url, open_location, safe_relative

EMPTY_PART_KEY = "empty"


class DatasetTarget(Protocol):
    @property
    def name(self) -> Path | str: ...  # what reports show

    @property
    def job_dataset(self) -> Path: ...  # SessionJob.dataset

    @property
    def job_url(self) -> str: ...  # SessionJob.dataset_url

    refused: list[str]  # manifest paths a repair refused to remove

    def writing(self) -> contextlib.AbstractContextManager[None]: ...  # held from load_manifest to commit

    def load_manifest(self) -> directory.Manifest: ...

    def begin(self, keys: list[str]) -> None: ...  # before the parts of these sessions change

    def remove_parts(self, parts: list[str]) -> list[str]: ...

    def damaged_parts(self, record: directory.SessionRecord) -> list[str]: ...  # missing or changed since written

    def finish(self, manifest: directory.Manifest, runs: list[str]) -> None: ...

    def commit(self) -> None: ...


def dataset_target(out: Path | str, scratch: Path) -> DatasetTarget:
    return RemoteDataset(open_location(str(out)), scratch) if is_url(out) else LocalDataset(Path(out))


def _complete(root: Path, manifest: directory.Manifest, runs: list[str], tables_present: set[str]) -> None:
    """Writes the schema table, an empty part for each table no session wrote, and the manifest."""
    manifest.runs += [run for run in runs if run not in manifest.runs]
    directory.write_schema_table(root)
    for table in PARTITIONED:
        if table.name not in tables_present:
            empty = directory.part_path(root, table.name, runs[0], 0, EMPTY_PART_KEY)
            directory.write_part(empty, table.file_schema().empty_table())
    directory.save_manifest(root, manifest)


class LocalDataset:
    """A dataset directory, changed as a transaction (``dataset.transaction``): one writer at a time,
    and an interrupted ingest repaired by the next."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.refused: list[str] = []  # manifest paths a repair refused to remove

    @property
    def name(self) -> Path:
        return self.root

    @property
    def job_dataset(self) -> Path:
        return self.root

    @property
    def job_url(self) -> str:
        return ""

    def writing(self) -> contextlib.AbstractContextManager[None]:
        return transaction.writer_lock(self.root)

    def load_manifest(self) -> directory.Manifest:
        self.root.mkdir(parents=True, exist_ok=True)
        manifest = directory.load_manifest(self.root)
        self.refused = transaction.repair(self.root, manifest)
        return manifest

    def begin(self, keys: list[str]) -> None:
        transaction.begin(self.root, keys)

    def remove_parts(self, parts: list[str]) -> list[str]:
        return directory.remove_parts(self.root, parts)

    def damaged_parts(self, record: directory.SessionRecord) -> list[str]:
        return directory.damaged_parts(self.root, record)

    def finish(self, manifest: directory.Manifest, runs: list[str]) -> None:
        present = {table.name for table in PARTITIONED if directory.table_files(self.root, table.name)}
        _complete(self.root, manifest, runs, present)

    def commit(self) -> None:
        transaction.commit(self.root)


class RemoteDataset:
    """A dataset on an object store: its manifest is one object, written last; there is no lock
    (one writer at a time is the user's to ensure) and no journal."""

    def __init__(self, location: Location, scratch: Path) -> None:
        self.location = location
        self.scratch = scratch
        self.refused: list[str] = []

    @contextlib.contextmanager
    def writing(self) -> Iterator[None]:
        yield

    def begin(self, keys: list[str]) -> None:
        pass

    def commit(self) -> None:
        pass

    @property
    def name(self) -> str:
        return self.location.url

    @property
    def job_dataset(self) -> Path:
        return self.scratch / "parts"  # unused: jobs with a dataset_url write to their own scratch

    @property
    def job_url(self) -> str:
        return self.location.url

    def load_manifest(self) -> directory.Manifest:
        local = self.scratch / "manifest"
        try:
            if self.location.exists(directory.MANIFEST):
                self.location.download(directory.MANIFEST, local / directory.MANIFEST)
        except OSError as exc:  # no such bucket, no access, no network
            raise ConfigError(f"{self.location.url}: cannot read the dataset: {exc}") from exc
        return directory.load_stored_manifest(local, self.location.url_of(directory.MANIFEST))

    def remove_parts(self, parts: list[str]) -> list[str]:
        refused = []
        for relative in parts:
            safe = safe_relative(relative)
            if safe is None or PurePosixPath(safe).suffix != ".parquet":
                manifest = self.location.url_of(directory.MANIFEST)
                refused.append(f"{manifest}: refused to remove {relative!r}: not a part")
                continue
            self.location.delete(safe)
        return refused

    def damaged_parts(self, record: directory.SessionRecord) -> list[str]:
        """Parts missing, or of another size than written (objects are not read again to hash them)."""
        if not hasattr(self, "_sizes"):
            self._sizes = {f.relative: f.size_bytes for f in self.location.files()}
        found = []
        for relative in record.parts:
            expected = record.part_checks.get(relative)
            size = self._sizes.get(relative)
            if size is None:
                found.append(f"{relative}: missing")
            elif expected is not None and expected.split(":", 1)[0] != str(size):
                found.append(f"{relative}: damaged (its size differs from what ingest wrote)")
        return found

    def finish(self, manifest: directory.Manifest, runs: list[str]) -> None:
        present = {f.relative.split("/", 1)[0] for f in self.location.files() if f.relative.endswith(".parquet")}
        local = self.scratch / "finish"
        _complete(local, manifest, runs, present)
        written = sorted(p for p in local.rglob("*") if p.is_file() and p.name != directory.MANIFEST)
        for path in written:
            self.location.upload(path, path.relative_to(local).as_posix())
        self.location.upload(local / directory.MANIFEST, directory.MANIFEST)

"""A dataset on an object store (``s3://bucket/prefix``), read where it lies: its tables are pyarrow
datasets over the store's file system, registered in DuckDB as views, so nothing is copied first and
no DuckDB extension is needed (DuckDB's own S3 reader would download one at run time)."""

from __future__ import annotations

import tempfile
from collections.abc import Collection, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from kinetoscope._errors import FormatError
from kinetoscope.dataset import directory
from kinetoscope.dataset.schema import TABLES, TABLES_BY_NAME
from kinetoscope.dataset.storage import Location, open_location
from kinetoscope.query import part_files
from kinetoscope.query.dataset import REPAIR_HINT, DamagedPartError, Dataset, parts_dataset, row_filter


def arrow_dataset(location: Location, table: str) -> pads.Dataset | None:
    """``table``'s parts on ``location`` as one pyarrow dataset (run and rank from the paths), or None."""
    declared = TABLES_BY_NAME[table]
    files = [location.path(f"{table}/{f.relative}") for f in location.files(table) if f.relative.endswith(".parquet")]
    if not files:
        return None
    return parts_dataset(declared, files, location.path(table), location.fs)


class StoredDataset(Dataset):
    """``Dataset`` for a dataset on an object store; same tables, same SQL. It has a ``url``, no ``path``."""

    def __init__(self, url: str) -> None:
        self.location = open_location(url)
        if not self.location.exists(directory.MANIFEST):
            what = f"not a kinetoscope dataset (no {directory.MANIFEST}); run `kinetoscope ingest` first"
            raise FormatError(f"{url}: {what}")
        with tempfile.TemporaryDirectory(prefix="kinetoscope-manifest-") as scratch:
            self.location.download(directory.MANIFEST, Path(scratch) / directory.MANIFEST)
            self.manifest = directory.load_stored_manifest(Path(scratch), self.location.url_of(directory.MANIFEST))
        self.url = self.location.url
        stored = {f.relative for f in self.location.files()}
        for record in self.manifest.sessions.values():
            missing = next((part for part in record.parts if part not in stored), None)
            if missing is not None:
                where = self.location.url_of(missing)
                raise DamagedPartError(f"{where}: missing (the manifest lists it); {REPAIR_HINT}")

    def table(
        self, name: str, columns: Sequence[str] | None = None, run: str | None = None, rank: int | None = None,
        narrowed: Collection[str] = (),
    ) -> pa.Table:
        """As ``Dataset.table``; every column as declared (``narrowed`` allows 32 bits, never asks for them)."""
        declared = TABLES_BY_NAME.get(name)
        if declared is None:
            raise KeyError(f"no table {name!r}; tables: {', '.join(self.tables)}")
        wanted = list(columns) if columns is not None else declared.column_names()
        with self.reading_parts():
            source = arrow_dataset(self.location, name)
            if source is None:
                return declared.empty().select(wanted)
            return source.to_table(columns=wanted, filter=row_filter(source.schema, run, rank))

    def damaged_part(self, exc: BaseException) -> str | None:
        """The part missing, or of another size than ingest wrote, or whose footer does not read."""
        sizes = {f.relative: f.size_bytes for f in self.location.files()}
        for record in self.manifest.sessions.values():
            for part in record.parts:
                check = record.part_checks.get(part, "")
                if part not in sizes:
                    return f"{self.location.url_of(part)}: missing"
                if check and check.split(":", 1)[0] != str(sizes[part]):
                    return f"{self.location.url_of(part)}: damaged (its size differs from what ingest wrote)"
        for relative in sorted(r for r in sizes if r.endswith(".parquet")):
            try:
                with self.location.fs.open_input_file(self.location.path(relative)) as handle:
                    pq.ParquetFile(handle).read(use_threads=False)
            except (pa.ArrowException, OSError):
                return f"{self.location.url_of(relative)}: damaged Parquet part ({type(exc).__name__}: {exc})"[:600]
        return None

    def source(self, name: str) -> pads.FileSystemDataset | None:
        return arrow_dataset(self.location, name)

    def _located_parts(self, name: str, run: str | None) -> list[part_files.Part] | None:
        source = self.source(name)  # the store's parts, listed by the dataset
        return part_files.parts_of(source, run) if source is not None else None

    @cached_property
    def _connection(self) -> Any:
        import duckdb

        sources = {table.name: arrow_dataset(self.location, table.name) for table in TABLES}
        return _ViewsOnEveryCursor(duckdb.connect(":memory:"), sources)


class _ViewsOnEveryCursor:
    """A DuckDB connection whose cursors see every table: DuckDB keeps registered Arrow objects per
    connection (and a cursor is a connection of its own), so each cursor registers them again."""

    def __init__(self, connection: Any, sources: dict[str, pads.Dataset | None]) -> None:
        self.connection = connection
        self.sources = sources

    def cursor(self) -> Any:
        cursor = self.connection.cursor()
        for table in TABLES:
            source = self.sources[table.name]
            columns = ", ".join(f'"{name}"' for name in table.column_names())
            cursor.register(f"_parts_{table.name}", source if source is not None else table.empty())
            cursor.execute(f'CREATE TEMP VIEW "{table.name}" AS SELECT {columns} FROM "_parts_{table.name}"')
        return cursor

    def close(self) -> None:
        self.connection.close()

"""The dataset as DuckDB views: one view per table of the dataset layout.

This is the viewer's only seam onto the dataset layout (``<table>/run=<run>/rank=<rank>/*.parquet``
for the partitioned tables, ``<table>/*.parquet`` for the small ones); every query the viewer runs
goes through these view names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import duckdb

from kinetoscope._errors import FormatError

DATASET_MARKER = "_dataset.json"
TABLES = ("events", "flows", "counters", "allocations", "frames", "sessions", "files", "warnings", "schema")

# Columns each view must expose, with the value used when a table is absent from the dataset.
EMPTY_TABLES = {
    "events": "SELECT 0::BIGINT id, ''::VARCHAR session, ''::VARCHAR layer, ''::VARCHAR name, ''::VARCHAR category,"
    " 0::BIGINT ts_ns, 0::BIGINT dur_ns, 0::BIGINT pid, 0::BIGINT tid, 0::INT device, 0::BIGINT stream,"
    " 0::BIGINT correlation, 0::BIGINT external_id, 0::BIGINT stack_id, 0::INT depth, ''::VARCHAR args,"
    " ''::VARCHAR run, 0::BIGINT rank WHERE false",
    "flows": "SELECT ''::VARCHAR run, 0::BIGINT rank, 0::BIGINT src_id, 0::BIGINT dst_id, ''::VARCHAR kind WHERE false",
    "counters": "SELECT ''::VARCHAR run, 0::BIGINT rank, ''::VARCHAR session, ''::VARCHAR name, 0::BIGINT ts_ns,"
    " 0::DOUBLE value, ''::VARCHAR unit, 0::INT device WHERE false",
    "allocations": "SELECT ''::VARCHAR run, 0::BIGINT rank, ''::VARCHAR session, 0::BIGINT addr, 0::BIGINT size_bytes,"
    " 0::BIGINT alloc_ts_ns, 0::BIGINT free_ts_ns, 0::INT device, 0::BIGINT stack_id, 0::BIGINT event_id WHERE false",
    "frames": "SELECT ''::VARCHAR run, 0::BIGINT rank, 0::BIGINT stack_id, 0::BIGINT parent_id, ''::VARCHAR name,"
    " ''::VARCHAR file, 0::INT line WHERE false",
    "sessions": "SELECT ''::VARCHAR run, 0::BIGINT rank, ''::VARCHAR session, ''::VARCHAR host, 0::BIGINT pid,"
    " 0::BIGINT world_size, 0::BIGINT start_ns, 0::BIGINT stop_ns WHERE false",
    "files": "SELECT ''::VARCHAR run, 0::BIGINT rank, ''::VARCHAR session, ''::VARCHAR name, 0::BIGINT size_bytes,"
    " ''::VARCHAR status WHERE false",
    "warnings": "SELECT ''::VARCHAR run, 0::BIGINT rank, ''::VARCHAR session, ''::VARCHAR file, ''::VARCHAR \"where\","
    " ''::VARCHAR kind, ''::VARCHAR message, 0::BIGINT count WHERE false",
    "schema": "SELECT ''::VARCHAR \"table\", ''::VARCHAR \"column\", ''::VARCHAR type, ''::VARCHAR unit,"
    " ''::VARCHAR description WHERE false",
}


@dataclass(frozen=True)
class Dataset:
    """An ingested dataset directory."""

    root: Path
    runs: tuple[str, ...]

    @staticmethod
    def open(root: Path) -> Dataset:
        marker = root / DATASET_MARKER
        if not marker.is_file():
            raise FormatError(f"{root}: not a dataset (no {DATASET_MARKER}); run `kinetoscope ingest` on it first")
        try:
            meta = json.loads(marker.read_text())
        except (OSError, ValueError) as exc:
            raise FormatError(f"{marker}: unreadable dataset description: {exc}") from exc
        return Dataset(root.resolve(), tuple(str(r) for r in meta.get("runs", [])))

    def files_of(self, table: str) -> list[Path]:
        return sorted((self.root / table).rglob("*.parquet")) if (self.root / table).is_dir() else []

    def fingerprint(self) -> str:
        """Changes whenever a Parquet file of the dataset is added, removed or rewritten."""
        parts = []
        for table in TABLES:
            for path in self.files_of(table):
                stat = path.stat()
                parts.append(f"{path.relative_to(self.root)}:{stat.st_size}:{stat.st_mtime_ns}")
        return "\n".join(parts)


def source_sql(dataset: Dataset, table: str) -> str:
    """A SELECT over one table of the dataset (or an empty one with the contract's columns)."""
    if not dataset.files_of(table):
        return EMPTY_TABLES[table]
    glob = str(dataset.root / table / "**" / "*.parquet").replace("'", "''")
    return f"SELECT * FROM read_parquet('{glob}', hive_partitioning=true, union_by_name=true)"


def register_views(con: duckdb.DuckDBPyConnection, dataset: Dataset) -> None:
    """Creates one view per dataset table on `con`."""
    for table in TABLES:
        con.execute(f'CREATE OR REPLACE VIEW "{table}" AS {source_sql(dataset, table)}')

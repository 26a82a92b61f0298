"""The dataset as DuckDB views: one view per table of the dataset layout.

This is the viewer's only seam onto the dataset layout (``<table>/run=<run>/rank=<rank>/*.parquet``
for the partitioned tables, ``<table>/*.parquet`` for the small ones); every query the viewer runs
goes through these view names. The tables, their columns and the manifest are the ones ingest
declares (``ingest.schema``, ``ingest.dataset_dir``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import duckdb
import pyarrow as pa

from kinetoscope._errors import FormatError
from kinetoscope.ingest import dataset_dir as layout
from kinetoscope.ingest.schema import TABLES, TABLES_BY_NAME

TABLE_NAMES = tuple(table.name for table in TABLES)
_SQL_TYPES = {
    pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.int32(): "INTEGER", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN"
}


def _sql_type(data_type: pa.DataType) -> str:
    return _SQL_TYPES[data_type.value_type if pa.types.is_dictionary(data_type) else data_type]


def empty_sql(table: str) -> str:
    """A SELECT of no rows with the declared columns of `table` (for a table no session wrote)."""
    columns = ", ".join(f'NULL::{_sql_type(c.type)} AS "{c.name}"' for c in TABLES_BY_NAME[table].columns)
    return f"SELECT {columns} WHERE false"


@dataclass(frozen=True)
class Dataset:
    """An ingested dataset directory."""

    root: Path
    runs: tuple[str, ...]

    @staticmethod
    def open(root: Path) -> Dataset:
        if not layout.is_dataset(root):
            raise FormatError(f"{root}: not a dataset (no {layout.MANIFEST}); run `kinetoscope ingest` on it first")
        manifest = layout.load_manifest(root)
        return Dataset(root.resolve(), tuple(str(r) for r in manifest.runs))

    def files_of(self, table: str) -> list[Path]:
        return sorted((self.root / table).rglob("*.parquet")) if (self.root / table).is_dir() else []

    def fingerprint(self) -> str:
        """Changes whenever a Parquet file of the dataset is added, removed or rewritten."""
        parts = []
        for table in TABLE_NAMES:
            for path in self.files_of(table):
                stat = path.stat()
                parts.append(f"{path.relative_to(self.root)}:{stat.st_size}:{stat.st_mtime_ns}")
        return "\n".join(parts)


def source_sql(dataset: Dataset, table: str) -> str:
    """A SELECT over one table of the dataset (or an empty one with the declared columns)."""
    if not dataset.files_of(table):
        return empty_sql(table)
    glob = str(dataset.root / table / "**" / "*.parquet").replace("'", "''")
    return f"SELECT * FROM read_parquet('{glob}', hive_partitioning=true, union_by_name=true)"


def register_views(con: duckdb.DuckDBPyConnection, dataset: Dataset) -> None:
    """Creates one view per dataset table on `con`."""
    for table in TABLE_NAMES:
        con.execute(f'CREATE OR REPLACE VIEW "{table}" AS {source_sql(dataset, table)}')


def lock_down(con: duckdb.DuckDBPyConnection, dataset: Dataset, *, memory_limit: str) -> None:
    """From now on `con` opens no file outside the dataset folder (files already attached stay
    readable), uses at most `memory_limit`, and refuses any SET that would undo this."""
    con.execute(f"SET memory_limit = '{memory_limit}'")
    con.execute("SET allowed_directories = ?", [[str(dataset.root) + "/"]])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")

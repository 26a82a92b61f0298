"""``Dataset``: the tables of an ingested dataset as Arrow, and parameterised SQL over them.

The one class every reader of a dataset uses (``kinetoscope.open``, the commands, the viewer): the
tables and manifest come from ``dataset`` (``dataset.schema``, ``dataset.directory``); each table is
one SELECT over its parts (``view_sql``) that any DuckDB connection can take as a view.

A dataset is refused while its ingest journal says an ingest was interrupted (its tables would be
missing sessions). A part that pyarrow or DuckDB cannot read is a ``DamagedPartError`` naming the
part and how to repair it, never a pyarrow or DuckDB error.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import operator
import os
import re
from collections.abc import Collection, Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from kinetoscope._errors import FormatError
from kinetoscope.dataset import directory, transaction
from kinetoscope.dataset.schema import TABLES, TABLES_BY_NAME, Table
from kinetoscope.dataset.storage import is_url
from kinetoscope.query import part_files

if TYPE_CHECKING:
    import pyarrow.dataset as pads  # imported where a dataset is made: about 7 MiB (``part_files.plain_parts``)

Params = Sequence[Any] | Mapping[str, Any] | None
PARTITIONING = pa.schema([("run", pa.string()), ("rank", pa.int32())])
_SQL_TYPES = {
    pa.string(): "VARCHAR", pa.int64(): "BIGINT", pa.int32(): "INTEGER", pa.float64(): "DOUBLE", pa.bool_(): "BOOLEAN"
}


REPAIR_HINT = (
    "run `kinetoscope ingest` on its profile again (it finds damaged or missing parts and ingests their "
    "sessions again), or `kinetoscope ingest --force`"
)
# DuckDB's errors on a damaged Parquet file ("No magic bytes", "don't know what type", a failed
# decompression); its errors about a query (Binder, Parser, Catalog...) are never about a part.
_DUCKDB_FILE_ERRORS = frozenset({"Error", "IOException", "InvalidInputException", "InternalException"})
_PARQUET_PATH_RE = re.compile(r"[^\s'\"]+\.parquet")


class DamagedPartError(FormatError):
    """A part of a dataset cannot be read (damaged, cut short or missing); the message names it."""


def _quote(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _sql_type(data_type: pa.DataType) -> str:
    return _SQL_TYPES[data_type.value_type if pa.types.is_dictionary(data_type) else data_type]


def empty_sql(table: Table) -> str:
    """A SELECT of no rows with the declared columns of ``table`` (for a table no session wrote)."""
    columns = ", ".join(f'NULL::{_sql_type(c.type)} AS "{c.name}"' for c in table.columns)
    return f"SELECT {columns} WHERE false"


def view_sql(root: Path, table: Table) -> str:
    """The SELECT that reads ``table``'s parts, with columns in their declared order."""
    if not directory.table_files(root, table.name):
        return empty_sql(table)
    columns = ", ".join(f'"{name}"' for name in table.column_names())
    if table.partitioned:
        glob = _quote(str(root / table.name / "**" / "*.parquet"))
        source = (
            f"read_parquet({glob}, hive_partitioning = true, union_by_name = true, "
            "hive_types = {'run': VARCHAR, 'rank': INTEGER})"
        )
    else:
        source = f"read_parquet({_quote(str(root / table.name / '*.parquet'))}, union_by_name = true)"
    return f"SELECT {columns} FROM {source}"


class Dataset:
    """An ingested dataset. ``table(name)`` reads one table; ``sql(query, params)`` queries them all."""

    def __init__(self, path: str | Path) -> None:
        path = Path(path)
        if not directory.is_dataset(path):
            raise FormatError(
                f"{path}: not a kinetoscope dataset (no {directory.MANIFEST}); run `kinetoscope ingest` first"
            )
        self.path = path.resolve()
        refuse_unfinished(self.path)
        self.manifest = directory.load_manifest(path)
        missing = _missing_part(self.path, self.manifest)
        if missing is not None:
            raise DamagedPartError(f"{missing}: missing (the manifest lists it); {REPAIR_HINT}")

    @property
    def tables(self) -> list[str]:
        return [table.name for table in TABLES]

    @property
    def runs(self) -> list[str]:
        return sorted(self.manifest.runs)

    def parts(self, table: str) -> list[Path]:
        """The Parquet parts of ``table``."""
        return directory.table_files(self.path, table)

    def ranks(self, run: str | None = None) -> list[tuple[str, int]]:
        """The (run, rank) pairs of the dataset (of ``run``), sorted: those of its sessions, and any
        its events are partitioned by that the manifest does not list (a stale manifest)."""
        keys = set(self.manifest.ranks(run))
        with self.reading_parts():
            parts = self._located_parts("events", run)
        return sorted(keys | {(part.run, part.rank) for part in parts or ()})

    def _located_parts(self, name: str, run: str | None) -> list[part_files.Part] | None:
        """``part_files.parts_of`` table ``name``'s dataset: from the parts' plain paths where they are
        (``part_files.plain_parts``: no Arrow dataset made), else from the dataset."""
        parts = part_files.plain_parts([str(p) for p in self.parts(name)], str(self.path / name), run)
        if parts is not None:
            return parts
        source = self.source(name)
        return part_files.parts_of(source, run) if source is not None else None

    def source(self, name: str) -> pads.FileSystemDataset | None:
        """The Arrow dataset of table ``name``'s parts (None: it has none)."""
        files = [str(p) for p in self.parts(name)]
        return _source(self.path, TABLES_BY_NAME[name], files) if files else None

    def rows(self, table: str) -> int:
        """How many rows ``table`` holds (read from its parts' footers)."""
        with self.reading_parts():
            return sum(pq.read_metadata(path).num_rows for path in self.parts(table))

    def fingerprint(self) -> str:
        """Changes whenever a part of the dataset is added, removed or rewritten."""
        lines = []
        for table in self.tables:
            for path in self.parts(table):
                stat = path.stat()
                lines.append(f"{path.relative_to(self.path)}:{stat.st_size}:{stat.st_mtime_ns}")
        return "\n".join(lines)

    def create_views(self, connection: Any) -> None:
        """One view per table on a DuckDB ``connection`` (creating a view reads its parts' footers)."""
        with self.reading_parts():
            for table in TABLES:
                connection.execute(f'CREATE OR REPLACE VIEW "{table.name}" AS {view_sql(self.path, table)}')

    def table(
        self, name: str, columns: Sequence[str] | None = None, run: str | None = None, rank: int | None = None,
        narrowed: Collection[str] = (),
    ) -> pa.Table:
        """One table as Arrow (optionally some of its columns, one run, and of a table with ranks one
        rank); ``narrowed``: integer columns that may come in half their width where every value read
        fits, ``run`` if named dictionary-encoded, and ``args`` if named null on the rows whose text
        no analysis reads (``part_files``: a local partitioned table read part by part; else as
        declared)."""
        with self.reading_parts():
            return self._table(name, columns, run, rank, narrowed)

    def _table(
        self, name: str, columns: Sequence[str] | None, run: str | None, rank: int | None, narrowed: Collection[str]
    ) -> pa.Table:
        declared = TABLES_BY_NAME.get(name)
        if declared is None:
            raise KeyError(f"no table {name!r}; tables: {', '.join(self.tables)}")
        files = [str(p) for p in self._files(declared, run, rank)]
        wanted = list(columns) if columns is not None else declared.column_names()
        if not files:
            return declared.empty().select(wanted)
        read = _read_plain(self.path, declared, files, wanted, run=run, rank=rank, narrowed=narrowed)
        if read is not None:
            return read
        source = _source(self.path, declared, files)
        if declared.partitioned:
            read = _read_by_file(source, wanted, run, rank, narrowed)
            if read is not None:
                return read
        return source.to_table(columns=wanted, filter=row_filter(source.schema, run, rank))

    def _files(self, declared: Table, run: str | None, rank: int | None) -> list[Path]:
        """The parts to read: of one rank's folder where a partitioned table's run and rank are given."""
        if declared.partitioned and run is not None and rank is not None:
            return directory.rank_files(self.path, declared.name, run, rank)
        return self.parts(declared.name)

    def load(
        self, columns: Mapping[str, Sequence[str] | None], run: str | None = None, rank: int | None = None,
        narrowed: Mapping[str, Collection[str]] | None = None,
    ) -> dict[str, pa.Table]:
        """Several tables at once: table name -> the columns to read (None: all); ``narrowed``: table
        name -> its columns that may come in 32 bits (``table``)."""
        narrow = narrowed or {}
        return {name: self.table(name, cols, run, rank, narrow.get(name, ())) for name, cols in columns.items()}

    @cached_property
    def _connection(self) -> Any:
        import duckdb

        connection = duckdb.connect(":memory:")
        self.create_views(connection)
        return connection

    def sql(self, query: str, params: Params = None) -> pa.Table:
        """Run ``query`` with every table as a view; values go in ``params`` (``?`` or ``$name``), never in the text."""
        with self.reading_parts():
            cursor = self._connection.cursor()
            try:
                relation = cursor.sql(query, params=params) if params else cursor.sql(query)
                return relation.to_arrow_table() if relation is not None else pa.table({})
            finally:
                cursor.close()

    def stream(self, query: str, params: Params = None, batch_rows: int = 65_536) -> Iterator[pa.RecordBatch]:
        """Like ``sql``, but the result arrives in record batches (for results too large to hold)."""
        with self.reading_parts():
            cursor = self._connection.cursor()
            try:
                relation = cursor.sql(query, params=params) if params else cursor.sql(query)
                if relation is not None:
                    yield from relation.to_arrow_reader(batch_rows)
            finally:
                cursor.close()

    @contextlib.contextmanager
    def reading_parts(self) -> Iterator[None]:
        """A pyarrow or DuckDB error on a part while the block runs becomes a ``DamagedPartError``
        naming the part; any other error (a wrong column, an SQL mistake) passes unchanged."""
        try:
            yield
        except FormatError:
            raise
        except Exception as exc:
            if not _may_be_file_error(exc):
                raise
            damaged = self.damaged_part(exc)
            if damaged is None:
                raise
            raise DamagedPartError(f"{damaged}; {REPAIR_HINT}") from exc

    def damaged_part(self, exc: BaseException) -> str | None:
        """The part (and what is wrong with it) that ``exc`` came from, or None where every part reads."""
        named = _PARQUET_PATH_RE.findall(str(exc))
        for text in named:
            path = Path(text)
            if path.is_relative_to(self.path) and not _readable(path):
                return f"{path}: damaged Parquet part ({_first_line(exc)})"
        for record in self.manifest.sessions.values():
            lost = directory.damaged_parts(self.path, record)
            if lost:
                return f"{self.path}/{lost[0]}"
        for table in self.tables:
            for path in self.parts(table):
                if not _readable(path):
                    return f"{path}: damaged Parquet part ({_first_line(exc)})"
        return None

    def close(self) -> None:
        if "_connection" in self.__dict__:
            self._connection.close()
            del self.__dict__["_connection"]

    def __enter__(self) -> Dataset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _may_be_file_error(exc: BaseException) -> bool:
    """pyarrow's errors (its I/O errors are OSErrors), and DuckDB's about reading a file."""
    if isinstance(exc, pa.ArrowException | OSError):
        return True
    kind = type(exc)
    return "duckdb" in kind.__module__ and kind.__name__ in _DUCKDB_FILE_ERRORS


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0][:300] if lines else ''}"


def _readable(path: Path) -> bool:
    """Whether the whole part reads (its footer, then every column)."""
    try:
        pq.ParquetFile(path).read(use_threads=False)
    except (pa.ArrowException, OSError):
        return False
    return True


def _missing_part(root: Path, manifest: directory.Manifest) -> Path | None:
    """The first part the manifest lists that is not there (one ``stat`` per part)."""
    for record in manifest.sessions.values():
        for part in record.parts:
            path = root / part
            if ".." not in Path(part).parts and not Path(part).is_absolute() and not os.path.lexists(path):
                return path
    return None


def refuse_unfinished(root: Path) -> None:
    """FormatError when ``root``'s journal names sessions an ingest was changing: one still writing
    (it holds the writer lock), or one interrupted (its tables would be missing those sessions)."""
    keys = transaction.interrupted(root)
    if not keys:
        return
    if _writer_active(root):
        raise FormatError(f"{root}: an ingest is writing this dataset now; read it once that ingest ends")
    what = "every session" if "?" in keys else f"{len(keys)} session(s)"
    raise FormatError(
        f"{root}: the last ingest into this dataset was interrupted ({what} left half written, "
        f"{transaction.JOURNAL} remains); run `kinetoscope ingest` again to repair it before reading it"
    )


def _writer_active(root: Path) -> bool:
    """Whether an ingest holds the dataset's writer lock now (without waiting, and taking nothing)."""
    try:
        handle = os.open(root / transaction.LOCK_FILE, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(handle)  # closing drops a shared lock taken here
    return False


def _source(root: Path, declared: Table, files: list[str]) -> pads.FileSystemDataset:
    return parts_dataset(declared, files, str(root / declared.name))


def parts_dataset(declared: Table, files: list[str], base_dir: str, filesystem: Any = None) -> pads.FileSystemDataset:
    """The Arrow dataset of ``files``, parts of ``declared`` below ``base_dir`` (run and rank from
    their paths where the table is partitioned), with the declared schema."""
    import pyarrow.dataset as pads

    partitioning = pads.partitioning(PARTITIONING, flavor="hive") if declared.partitioned else None
    return pads.dataset(
        files,
        filesystem=filesystem,
        format="parquet",
        partitioning=partitioning,
        partition_base_dir=base_dir,
        schema=declared.full_schema(),
    )


def _read_plain(
    root: Path, declared: Table, files: list[str], wanted: list[str], *, run: str | None, rank: int | None,
    narrowed: Collection[str],
) -> pa.Table | None:
    """``wanted`` of the ``files`` of ``declared`` as its dataset reads them, without making the dataset
    (``part_files.plain_parts``, ``part_files.read_files``): the parts of a partitioned table whose
    paths are plain, those of another where every row is wanted; else None."""
    if not declared.partitioned:
        whole = run is None and rank is None
        return part_files.read_files(files, declared.full_schema(), wanted) if whole else None
    parts = part_files.plain_parts(files, str(root / declared.name), run)
    return _parts_read(parts, declared.full_schema(), wanted, rank, narrowed) if parts is not None else None


def _read_by_file(
    source: pads.FileSystemDataset, wanted: list[str], run: str | None, rank: int | None, narrowed: Collection[str]
) -> pa.Table | None:
    """``source.to_table`` of ``wanted`` (and ``run``, ``rank``), read part by part in parallel
    (``part_files``); None where a part is not one that way reads as the dataset does."""
    parts = part_files.parts_of(source, run)
    return _parts_read(parts, source.schema, wanted, rank, narrowed) if parts is not None else None


def _parts_read(
    parts: list[part_files.Part], schema: pa.Schema, wanted: list[str], rank: int | None, narrowed: Collection[str]
) -> pa.Table | None:
    if any(schema.get_field_index(name) < 0 for name in wanted):
        return None  # the scanner reads them, or names the column it does not know
    mine = [part for part in parts if rank is None or part.rank == rank]
    return part_files.read_parts(mine, pa.schema([schema.field(name) for name in wanted]), pa.cpu_count(), narrowed)


def row_filter(schema: pa.Schema, run: str | None, rank: int | None) -> pads.Expression | None:
    """A scanner's filter for ``run`` and ``rank`` (a table without ranks: every rank's rows)."""
    import pyarrow.dataset as pads

    found = [pads.field("run") == run] if run is not None else []
    if rank is not None and schema.get_field_index("rank") >= 0:
        found.append(pads.field("rank") == rank)
    return functools.reduce(operator.and_, found) if found else None


def lock_down(connection: Any, dataset: Dataset, *, memory_limit: str, temp_dir: Path) -> None:
    """From now on ``connection`` opens no file outside the dataset folder (files already attached
    stay readable) and ``temp_dir`` (where it spills: a folder of its own, since DuckDB lets a
    connection read its temporary folder, by default ``.tmp`` of the working directory), uses at
    most ``memory_limit``, and refuses any SET that would undo this."""
    connection.execute(f"SET memory_limit = '{memory_limit}'")
    if connection.execute("SELECT current_setting('temp_directory')").fetchone()[0] != str(temp_dir):
        connection.execute("SET temp_directory = ?", [str(temp_dir)])
    connection.execute("SET allowed_directories = ?", [[str(dataset.path) + "/"]])
    connection.execute("SET enable_external_access = false")
    connection.execute("SET lock_configuration = true")


def read_dataset(path: str | Path) -> Dataset:
    """A dataset directory, or a dataset on an object store (an ``s3://`` URL, as text); a profile tree
    is ingested first by ``report.opening.open_dataset``."""
    if isinstance(path, str) and is_url(path):
        from kinetoscope.query.object_store import StoredDataset

        return StoredDataset(path)
    return Dataset(Path(path))

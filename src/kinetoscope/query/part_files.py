"""A partitioned table's local Parquet parts read file by file, each on one thread.

``pyarrow.dataset``'s scanner costs about a third more CPU time than reading the same columns with
``ParquetFile.read`` (its batches pass through the scan's queues, and each file's columns are
decoded by Arrow's threads, which contend with each other), and it starts one file's threads
after another's. Here each part is memory-mapped and read whole by one thread of a pool, the
parts in parallel, and ``run`` and ``rank`` come from the part's path as the dataset gives them
(``Fragment.partition_expression``). The rows, their order and the column types are those of
``Dataset.to_table``; a part this does not read as the scanner would (a column missing or of
another type, an older schema, a path with no ``run=`` or ``rank=``) makes the caller read the
table through the dataset instead.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from kinetoscope.model import kinds

if TYPE_CHECKING:
    import pyarrow.dataset as pads

PARTITION_COLUMNS = ("run", "rank")
# A run folder's name that the dataset's hive partitioning reads as it is written (no URI escape, not
# its null), and a rank's as the integer it spells.
_PLAIN_RUN = re.compile(r"[A-Za-z0-9_.+-]+")
_PLAIN_RANK = re.compile(r"0|-?[1-9][0-9]{0,8}")
_HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


@dataclass(frozen=True)
class Part:
    path: str
    run: str
    rank: int


def plain_parts(files: Sequence[str], base_dir: str, run: str | None) -> list[Part] | None:
    """``parts_of`` the dataset of ``files`` below ``base_dir``, read from their paths
    (``run=RUN/rank=N/FILE``) without making the dataset: ``pyarrow.dataset`` and what it loads
    (Parquet's encryption, CSV and JSON formats, Acero) hold about 7 MiB of resident memory, 4% of
    the one screen's peak on a raw 54 MB trace (docs/peers.md). None where a path is not of that
    plain form (a URI escape, a null, another layout): the dataset then reads it as it does."""
    prefix = base_dir.rstrip("/") + "/"
    found = []
    for file in files:
        part = _plain_part(file, prefix)
        if part is None:
            return None
        if run is None or part.run == run:
            found.append(part)
    return found


def _plain_part(file: str, prefix: str) -> Part | None:
    folders = file[len(prefix) :].split("/") if file.startswith(prefix) else []
    if len(folders) != 3 or not folders[0].startswith("run=") or not folders[1].startswith("rank="):
        return None
    run, rank = folders[0][len("run=") :], folders[1][len("rank=") :]
    if not _PLAIN_RUN.fullmatch(run) or run == _HIVE_NULL or not _PLAIN_RANK.fullmatch(rank):
        return None
    return Part(file, run, int(rank))


def parts_of(source: pads.FileSystemDataset, run: str | None) -> list[Part] | None:
    """The dataset's parts of ``run`` (None: every run) in the dataset's order, or None where a
    part's path does not name both its run and its rank."""
    import pyarrow.dataset as pads

    found = []
    for fragment in source.get_fragments():
        keys = pads.get_partition_keys(fragment.partition_expression)
        if not isinstance(keys.get("run"), str) or not isinstance(keys.get("rank"), int):
            return None
        if run is None or keys["run"] == run:
            found.append(Part(fragment.path, keys["run"], keys["rank"]))
    return found


def read_parts(parts: list[Part], schema: pa.Schema, threads: int, narrowed: Collection[str] = ()) -> pa.Table | None:
    """The columns of ``schema`` (the declared fields, ``run`` and ``rank`` among them where wanted)
    of ``parts``, one after another, the integer columns ``narrowed`` names in half their width
    (``NARROWER``) where every part's values fit, ``run`` where it names it dictionary-encoded
    (``string`` values, 32-bit indices: 4 bytes a row, not the run's name and its offset), and
    ``args`` where it names it null on the rows whose text no analysis reads (``_unread_args``); None where a part
    does not hold them as declared."""
    if not parts:
        return schema.empty_table()
    workers = max(1, min(threads, len(parts)))
    if workers == 1:
        tables = [_read_part(part, schema, narrowed) for part in parts]
    else:
        with ThreadPoolExecutor(workers, thread_name_prefix="kinetoscope-read") as pool:
            tables = list(pool.map(lambda part: _read_part(part, schema, narrowed), parts))
    if any(table is None for table in tables):
        return None
    return _concatenated([table for table in tables if table is not None])


def read_files(files: Sequence[str], schema: pa.Schema, columns: Sequence[str]) -> pa.Table | None:
    """``columns`` of the parts ``files`` of a table that is not partitioned, one after another, as
    the dataset of the declared ``schema`` reads them; None where a part does not hold that schema,
    or a column is not in it (the dataset then reads them, or names what is wrong)."""
    if any(schema.get_field_index(name) < 0 for name in columns):
        return None
    tables = []
    for path in files:
        file = pq.ParquetFile(path, memory_map=True)
        if not file.schema_arrow.equals(schema):
            return None
        tables.append(file.read(columns=list(columns), use_threads=False).select(list(columns)))
    return pa.concat_tables(tables) if tables else None


def _concatenated(tables: list[pa.Table]) -> pa.Table:
    """``tables`` one after another; a column narrowed in some parts and not in others in the widest
    of its parts' types (as declared)."""
    if len({table.schema for table in tables}) <= 1:
        return pa.concat_tables(tables)
    widest: dict[str, pa.DataType] = {}
    for field in (field for table in tables for field in table.schema):
        if field.name not in widest or _WIDTHS.get(field.type, 0) > _WIDTHS.get(widest[field.name], 0):
            widest[field.name] = field.type
    return pa.concat_tables([_widened(table, widest) for table in tables])


def _widened(table: pa.Table, widest: dict[str, pa.DataType]) -> pa.Table:
    for at, field in enumerate(table.schema):
        if field.type != widest[field.name]:
            table = table.set_column(at, field.name, table.column(at).cast(widest[field.name]))
    return table


def _read_part(part: Part, schema: pa.Schema, narrowed: Collection[str] = ()) -> pa.Table | None:
    stored = [field for field in schema if field.name not in PARTITION_COLUMNS]
    file = pq.ParquetFile(part.path, memory_map=True)
    held = file.schema_arrow
    for field in stored:
        at = held.get_field_index(field.name)
        if at < 0 or not held.field(at).type.equals(field.type):
            return None
    read: dict[str, pa.ChunkedArray] = {}
    for field in stored:  # the kinds, where read before the args, tell which args go unread
        unread = _unread_args(file, narrowed, read.get("kind")) if field.name == "args" else None
        read[field.name] = _read_column(file, field.name, field.name in narrowed, bool(narrowed), unread)
    rows = file.metadata.num_rows
    columns = [
        _partition_column(part, field, rows, field.name in narrowed)
        if field.name in PARTITION_COLUMNS
        else read.pop(field.name)
        for field in schema
    ]
    fields = [field.with_type(column.type) for field, column in zip(schema, columns, strict=True)]
    return pa.Table.from_arrays(columns, schema=pa.schema(fields, metadata=schema.metadata))


def _unread_args(
    file: pq.ParquetFile, narrowed: Collection[str], kind: pa.ChunkedArray | None = None
) -> np.ndarray | None:
    """Where ``narrowed`` names ``args``: the rows of ``file`` whose args text no analysis reads
    (``kinds.ARGS_IN_COLUMNS_KINDS``: an allocator instant's, 28 k rows and 3.8 of the 13.4 MiB of
    args of the public V100 trace), to be read as null; None where there are none. ``kind``: the
    file's kinds where already read (None: read here)."""
    if "args" not in narrowed or file.schema_arrow.get_field_index("kind") < 0:
        return None
    if kind is None:
        kind = _whole_column(file, "kind")
    found = pc.is_in(kind, value_set=pa.array(kinds.ARGS_IN_COLUMNS_KINDS, pa.string()))
    unread = np.asarray(pc.fill_null(found, False).to_numpy(zero_copy_only=False), dtype=bool)
    return unread if unread.any() else None


def _nulls_where(column: pa.Array, unread: np.ndarray | None) -> pa.Array:
    """``column`` with null where ``unread`` says (None: as it is), their text left out (a gather
    with null indices there: ``if_else`` would keep the whole text)."""
    if unread is None or not unread.any():
        return column
    return column.take(pa.array(np.arange(len(column), dtype=np.int32), mask=unread))


def _read_column(
    file: pq.ParquetFile, name: str, narrow: bool = False, text_by_row_group: bool = False,
    unread: np.ndarray | None = None,
) -> pa.ChunkedArray:
    """Column ``name`` of ``file``, read on its own: the reader gathers a column's row groups into
    one array, and reading every column at once holds all their decoded row groups and arrays
    together (1 M tiny events: 175 MB over the table's 127 as read alone, 202 read at once). A
    column of fixed-width values or dictionary indices that comes in several chunks (a dictionary
    column: one per row group) in one chunk, its dictionaries unified, as the analyses read it;
    text one chunk per row group (one chunk could outgrow 32-bit offsets, and the reader decodes a
    text column by doubling its buffers: read whole, the ``args`` of 151 k events took 36 MiB at
    the peak for the 13.4 it keeps; a row group at a time, the one row group's). ``narrow``: a
    64-bit integer column in 32 bits (a 32-bit one in 16) where all its values fit (``fits``). Text is read by
    row group for the analyses' narrowed read only (``text_by_row_group``): other readers keep one
    chunk, where taking a few rows does not first join the chunks. ``unread``: the rows read as null
    (``_unread_args``, of ``args``), each row group's as it is read."""
    if text_by_row_group and _by_row_group(file, name):
        starts = np.cumsum([0] + [file.metadata.row_group(at).num_rows for at in range(file.num_row_groups)])
        groups = [
            _nulls_where(_row_group_column(file, at, name), None if unread is None else unread[start:end])
            for at, (start, end) in enumerate(itertools.pairwise(starts.tolist()))
        ]
        return pa.chunked_array(groups, file.schema_arrow.field(name).type)
    column = _whole_column(file, name)
    if unread is not None:
        column = pa.chunked_array([_nulls_where(column.combine_chunks(), unread)], column.type)
    narrower = NARROWER.get(column.type)
    if narrow and narrower is not None and fits(column, narrower):
        column = column.cast(narrower)
    if column.num_chunks <= 1 or not _read_in_one_chunk(column.type):
        return column
    if pa.types.is_dictionary(column.type):
        column = pa.table([column], names=[name]).unify_dictionaries().column(0)
    return pa.chunked_array([column.combine_chunks()], column.type)


def _whole_column(file: pq.ParquetFile, name: str) -> pa.ChunkedArray:
    """Column ``name`` of ``file``, all its row groups: by its field's index from the file's reader,
    the column ``file.read(columns=[name])`` gives without a table read set up for each column
    (about 2 ms a call: 18 columns of the 151 k events of HTA's df_index_resolver trace took 47 ms
    of CPU so, 14 ms by index)."""
    return file.reader.read_column(file.schema_arrow.get_field_index(name))


# A narrowed integer column comes in half its width where every value of the part fits.
NARROWER = {pa.int64(): pa.int32(), pa.int32(): pa.int16()}
_WIDTHS = {pa.int16(): 16, pa.int32(): 32, pa.int64(): 64}
_INT16 = np.iinfo(np.int16)


def fits(column: pa.ChunkedArray, kind: pa.DataType) -> bool:
    """Whether every value of the integer ``column`` fits the integer type ``kind`` (nulls aside)."""
    bounds = np.iinfo(kind.to_pandas_dtype())
    low, high = pc.min_max(column).values()
    return low.as_py() is None or (bounds.min <= low.as_py() and high.as_py() <= bounds.max)


def _by_row_group(file: pq.ParquetFile, name: str) -> bool:
    """Whether column ``name`` of ``file`` is read one row group at a time: text of several row groups."""
    kind = file.schema_arrow.field(name).type
    return bool(file.num_row_groups > 1 and (pa.types.is_string(kind) or pa.types.is_large_string(kind)))


def _row_group_column(file: pq.ParquetFile, at: int, name: str) -> pa.Array:
    return file.read_row_group(at, columns=[name], use_threads=False).column(0).combine_chunks()


def _read_in_one_chunk(kind: pa.DataType) -> bool:
    """Whether a column of type ``kind`` is read into one chunk (fixed-width values, or dictionary indices)."""
    return bool(pa.types.is_dictionary(kind) or pa.types.is_primitive(kind))


def _partition_column(part: Part, field: pa.Field, rows: int, encoded: bool = False) -> pa.Array:
    """The part's ``rank`` or ``run`` for each of its ``rows``; ``encoded``: ``rank`` in 16 bits
    where it fits, ``run`` as a dictionary of its one value (as ``analysis.prepare`` would encode it)."""
    if field.name == "rank":
        if encoded and _INT16.min <= part.rank <= _INT16.max:
            return pa.array(np.full(rows, part.rank, dtype=np.int16), pa.int16())
        return pa.array(np.full(rows, part.rank, dtype=np.int32), field.type)
    zeros = pa.array(np.zeros(rows, dtype=np.int32))
    if encoded:
        return pa.DictionaryArray.from_arrays(zeros, pa.array([part.run], field.type))
    return pa.array([part.run], field.type).take(zeros)

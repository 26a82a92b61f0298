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

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.parquet as pq

PARTITION_COLUMNS = ("run", "rank")


@dataclass(frozen=True)
class Part:
    path: str
    run: str
    rank: int


def parts_of(source: pads.FileSystemDataset, run: str | None) -> list[Part] | None:
    """The dataset's parts of ``run`` (None: every run) in the dataset's order, or None where a
    part's path does not name both its run and its rank."""
    found = []
    for fragment in source.get_fragments():
        keys = pads.get_partition_keys(fragment.partition_expression)
        if not isinstance(keys.get("run"), str) or not isinstance(keys.get("rank"), int):
            return None
        if run is None or keys["run"] == run:
            found.append(Part(fragment.path, keys["run"], keys["rank"]))
    return found


def read_parts(parts: list[Part], schema: pa.Schema, threads: int) -> pa.Table | None:
    """The columns of ``schema`` (the declared fields, ``run`` and ``rank`` among them where wanted)
    of ``parts``, one after another; None where a part does not hold them as declared."""
    if not parts:
        return schema.empty_table()
    workers = max(1, min(threads, len(parts)))
    if workers == 1:
        tables = [_read_part(part, schema) for part in parts]
    else:
        with ThreadPoolExecutor(workers, thread_name_prefix="kinetoscope-read") as pool:
            tables = list(pool.map(lambda part: _read_part(part, schema), parts))
    if any(table is None for table in tables):
        return None
    return pa.concat_tables([table for table in tables if table is not None])


def _read_part(part: Part, schema: pa.Schema) -> pa.Table | None:
    stored = [field for field in schema if field.name not in PARTITION_COLUMNS]
    file = pq.ParquetFile(part.path, memory_map=True)
    held = file.schema_arrow
    for field in stored:
        at = held.get_field_index(field.name)
        if at < 0 or not held.field(at).type.equals(field.type):
            return None
    read = file.read(columns=[field.name for field in stored], use_threads=False)
    columns = [
        _partition_column(part, field, read.num_rows) if field.name in PARTITION_COLUMNS else read.column(field.name)
        for field in schema
    ]
    return pa.Table.from_arrays(columns, schema=schema)


def _partition_column(part: Part, field: pa.Field, rows: int) -> pa.Array:
    if field.name == "rank":
        return pa.array(np.full(rows, part.rank, dtype=np.int32), field.type)
    return pa.array([part.run], field.type).take(pa.array(np.zeros(rows, dtype=np.int32)))

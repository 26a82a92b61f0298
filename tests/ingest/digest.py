"""A digest of every table an ingest wrote: one SHA-256 per column of each part, so that two
ingests of the same sessions can be compared value by value (and a difference named by table
and column) without keeping the tables themselves."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

# The tables ingest writes from a session's files; ``schema`` and the manifest describe the dataset.
TABLES = ("events", "flows", "frames", "counters", "tracks", "allocations", "warnings", "sessions", "files")
# Columns that differ between two ingests of the same files: when and from where it ran.
VOLATILE = frozenset({"ingested_at", "ingest_ns", "path", "source_path", "mtime_ns", "kinetoscope_version"})


def column_digest(column: pa.ChunkedArray | pa.Array) -> str:
    """The SHA-256 of a column's values (dictionary columns by their values, not their codes)."""
    if pa.types.is_dictionary(column.type):
        column = column.cast(column.type.value_type)
    values = column.to_pylist()
    return hashlib.sha256(json.dumps(values, default=repr).encode()).hexdigest()


def table_digest(table: pa.Table) -> dict[str, Any]:
    columns = {name: column_digest(table.column(name)) for name in table.column_names if name not in VOLATILE}
    return {"rows": table.num_rows, "columns": columns}


def dataset_digest(dataset: Path) -> dict[str, list[dict[str, Any]]]:
    """Table -> the digests of its parts, in a stable order (by partition directory, then content)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for table in TABLES:
        parts = sorted((dataset / table).rglob("*.parquet"))
        digests = [
            {"partition": p.parent.relative_to(dataset / table).as_posix(), **table_digest(pq.read_table(p))}
            for p in parts
        ]
        found[table] = sorted((d for d in digests if d["rows"]), key=lambda d: json.dumps(d, sort_keys=True))
    return found


def differences(found: dict[str, Any], expected: dict[str, Any]) -> list[str]:
    """``table[part] column`` for each digest that differs (empty when the datasets agree)."""
    out = []
    for table in sorted(set(found) | set(expected)):
        mine, theirs = found.get(table, []), expected.get(table, [])
        if len(mine) != len(theirs):
            out.append(f"{table}: {len(mine)} parts, expected {len(theirs)}")
            continue
        for i, (a, b) in enumerate(zip(mine, theirs, strict=True)):
            if a["rows"] != b["rows"]:
                out.append(f"{table}[{i}]: {a['rows']} rows, expected {b['rows']}")
            for name in sorted(set(a["columns"]) | set(b["columns"])):
                if a["columns"].get(name) != b["columns"].get(name):
                    out.append(f"{table}[{i}] column {name}")
    return out


def ingest_digest(profile: Path, out: Path, **options: Any) -> dict[str, list[dict[str, Any]]]:
    """Ingest the sessions under ``profile`` into ``out`` (in this process) and digest the dataset."""
    from kinetoscope.ingest import IngestOptions, ingest

    report = ingest(IngestOptions(profile_dir=profile, out=out, jobs=1, **options))
    assert report.status in ("ok", "partial"), report.status
    return dataset_digest(out)

"""Counting the viewer's reads of a dataset's Parquet parts, through DuckDB's own file-system log.

Every DuckDB connection opened while ``counting_parts`` runs logs its file opens and reads to a
folder of its own (DuckDB writes the log when the connection's database closes); ``PartReads``
adds them up per Parquet part of the dataset.

DuckDB reads a part's footer for each query that scans it or binds a view over it (unless it keeps
footers: ``parquet_metadata_cache``), then the column chunks that query needs; so the times the
same byte range is read count the passes over a part. Opens do not: one scan opens a part twice
(metadata, then data).
"""

from __future__ import annotations

import contextlib
import csv
import gc
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pytest

FOOTER_TAIL_BYTES = 8  # a Parquet file ends with its footer's length and magic


@dataclass
class PartReads:
    """The byte ranges read of each Parquet part (paths relative to the dataset), once the block has ended."""

    dataset: Path
    log_dirs: list[Path] = field(default_factory=list)
    ranges: dict[str, Counter[tuple[int, int]]] = field(default_factory=dict)

    def collect(self) -> None:
        for folder in self.log_dirs:
            for path in folder.glob("duckdb_log_entries*.csv"):
                with path.open(newline="") as handle:
                    for row in csv.DictReader(handle):
                        self._add(row)

    def _add(self, row: dict[str, str]) -> None:
        if row.get("type") != "FileSystem":
            return
        message = json.loads(row["message"])
        part = Path(message.get("path", ""))
        if message.get("op") != "READ" or part.suffix != ".parquet" or self.dataset not in part.parents:
            return
        start = int(message["pos"])
        key = str(part.relative_to(self.dataset))
        self.ranges.setdefault(key, Counter())[(start, start + int(message["bytes"]))] += 1

    def passes(self, table: str | None = None) -> dict[str, int]:
        """Per part (of `table`, or of every table): how many times its most-read byte range was read."""
        return {k: max(c.values()) for k, c in self.ranges.items() if table is None or k.split("/")[0] == table}

    def beyond_footer(self, table: str) -> dict[str, int]:
        """Per part of `table`: bytes read outside its footer (its columns' data)."""
        out = {}
        for key, ranges in self.ranges.items():
            if key.split("/")[0] == table:
                size = (self.dataset / key).stat().st_size
                out[key] = sum(end - start for start, end in ranges if end < size - FOOTER_TAIL_BYTES)
        return out


@contextlib.contextmanager
def counting_parts(monkeypatch: pytest.MonkeyPatch, dataset: Path, log_root: Path) -> Iterator[PartReads]:
    """Logs the file accesses of every DuckDB connection made in the block; the caller closes them
    (so their logs are written) before the block ends."""
    reads = PartReads(dataset.resolve())
    real_connect = duckdb.connect

    def connect(*args: Any, **kwargs: Any) -> duckdb.DuckDBPyConnection:
        con = real_connect(*args, **kwargs)
        folder = log_root / f"connection-{len(reads.log_dirs)}"
        with contextlib.suppress(duckdb.Error):  # a connection locked at connect reads no file anyway
            con.execute(f"CALL enable_logging('FileSystem', storage = 'file', storage_path = '{folder}')")
            reads.log_dirs.append(folder)
        return con

    with monkeypatch.context() as patch:
        patch.setattr(duckdb, "connect", connect)
        yield reads
    gc.collect()  # cursors keep a database open, and its log unwritten
    reads.collect()

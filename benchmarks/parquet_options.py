"""Parquet options of the dataset's parts against Parquet's defaults: write time and file size.

Ingests a trace once, reads its ``events`` part back, then writes the same record batches
(as ingest does, one row group per batch) with zstd and Parquet's default encodings (a
dictionary for every column) and with ``directory.write_options`` (integers delta-encoded,
dictionaries for strings but not ``args``). Medians of several repeats, in one process.

Usage: PYTHONPATH=src python benchmarks/parquet_options.py [--mb 55] [--repeats 5] [--sessions DIR]
Without --sessions, a one-rank trace of --mb MB is generated and imported under /tmp.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from gen_multirank_trace import generate

from kinetoscope.dataset import directory
from kinetoscope.importer.trace_import import ImportOptions, import_trace
from kinetoscope.ingest import IngestOptions, ingest


def write(batches: list[pa.RecordBatch], path: Path, options: dict[str, Any]) -> float:
    start = time.perf_counter()
    with pq.ParquetWriter(path, batches[0].schema, **options) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return time.perf_counter() - start


def events_batches(sessions: Path, work: Path) -> list[pa.RecordBatch]:
    ingest(IngestOptions(profile_dir=sessions, out=work / "ds", jobs=1))
    parts = directory.table_files(work / "ds", "events")
    return [b for part in parts for b in pq.read_table(part).to_batches(max_chunksize=10_000)]


def sessions_of(args: argparse.Namespace, work: Path) -> Path:
    if args.sessions:
        return Path(args.sessions)
    for trace in generate(work / "gen", 1, args.mb):
        import_trace(trace, ImportOptions(out_dir=work / "sessions"))
    return work / "sessions"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=55)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sessions", help="session directories to ingest instead of a generated trace")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="parquet-options-"))
    try:
        batches = events_batches(sessions_of(args, work), work)
        schema = batches[0].schema
        variants = {
            "Parquet defaults (zstd)": {"compression": "zstd"},
            "directory.write_options": directory.write_options(schema),
        }
        rows = sum(b.num_rows for b in batches)
        memory_mib = sum(b.nbytes for b in batches) / 2**20
        print(f"events: {rows} rows in {len(batches)} batches, {memory_mib:.1f} MiB in memory")
        results = {}
        for name, options in variants.items():
            path = work / "out.parquet"
            seconds = statistics.median(write(batches, path, options) for _ in range(args.repeats))
            results[name] = (seconds, path.stat().st_size)
            print(f"  {name:<26} write {seconds:6.3f} s   file {path.stat().st_size / 2**20:6.2f} MiB")
        (base_s, base_size), (ours_s, ours_size) = results.values()
        print(f"  ratio: {base_s / ours_s:.2f}x faster to write, file {ours_size / base_size:.2f} of the default size")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

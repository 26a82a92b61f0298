"""Rebuild one fuzz input from its series and index, to reproduce a failure outside the suite.

    PYTHONPATH=src python -m tests.fuzz.replay ntrace 16 /tmp/ntrace-16.pb
    PYTHONPATH=src python -m tests.fuzz.replay session_trace.json 3 /tmp/trace-3.json

The series is the name a failure prints before ``#``; the seed is the file of
``tests/data/fuzz-seed`` that series mutates (``device`` and ``import_cuda`` need the imported
CUDA trace, and are rebuilt from ``tests/data/import-cuda-alexnet``; ``parquet_part``,
``summary_parquet_part``, ``dataset_json`` and ``viewer_index`` the seed session ingested).
"""

from __future__ import annotations

import gzip
import json
import shutil
import sys
import tempfile
from pathlib import Path

from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.importer import trace_import as imp

from .mutate import mutate, mutate_snapshot
from .test_fuzz import CUDA_TRACE, KERNEL_INDEX, SEED

FILES = {"ntrace": "ntrace.pb", "cpu_util": "cpu_util.pb", "host_mem": "host_mem.pb", "trace_info": layout.TRACE_INFO,
         "snapshot": "memory_snapshot_rank0.pickle", "import_cpu": layout.TRACE_JSON}  # fmt: skip


SNAPSHOT_SERIES = ("snapshot_fields", "dump_snapshot_fields", "tree_memory_snapshot_rank0.pickle")
DATASET_SERIES = ("parquet_part", "summary_parquet_part", "dataset_json", "viewer_index")


def _dataset_seed(series: str) -> bytes:
    from kinetoscope.dataset import directory
    from kinetoscope.ingest import IngestOptions, ingest
    from kinetoscope.query.dataset import Dataset
    from kinetoscope.viewer.indexing.index import ViewerIndex, index_path

    with tempfile.TemporaryDirectory() as tmp:
        session = layout.session_path(Path(tmp) / "profile", "fuzz-host", 4242, 1_764_000_000_000_000_000, 0)
        shutil.copytree(SEED, session)
        dataset = Path(tmp) / "dataset"
        ingest(IngestOptions(profile_dir=Path(tmp) / "profile", out=dataset, jobs=1))
        if series == "dataset_json":
            return (dataset / directory.MANIFEST).read_bytes()
        if series == "viewer_index":
            ViewerIndex.open(Dataset(dataset)).close()
            return index_path(Dataset(dataset)).read_bytes()
        return next(p for p in directory.table_files(dataset, "events") if "empty" not in p.name).read_bytes()


def seed_of(series: str) -> tuple[bytes, bool]:
    """(seed bytes, mutated as JSON) of a series."""
    if series in DATASET_SERIES:
        return _dataset_seed(series), series == "dataset_json"
    if series in SNAPSHOT_SERIES:
        return (SEED / "memory_snapshot_rank0.pickle").read_bytes(), False
    if series == "kernel_index":
        return json.dumps(KERNEL_INDEX, indent=1).encode(), True
    if series == "import_cuda":
        return gzip.decompress(CUDA_TRACE.read_bytes()), True
    if series == "device":
        with tempfile.TemporaryDirectory() as tmp:
            session = imp.import_trace(CUDA_TRACE, imp.ImportOptions(out_dir=Path(tmp))).session
            assert session is not None
            return (session / "device_0.pb").read_bytes(), False
    name = FILES.get(series) or series.split("_", 1)[1]  # session_<file>, dump_<file>, tree_<file>
    return (SEED / name).read_bytes(), name.endswith(".json")


def main(argv: list[str]) -> int:
    series, index, out = argv[0], int(argv[1]), Path(argv[2])
    seed, as_json = seed_of(series)
    data = (
        mutate_snapshot(seed, series, index) if series in SNAPSHOT_SERIES else mutate(seed, series, index, json=as_json)
    )
    out.write_bytes(data)
    print(f"{out}: input {index} of series {series} ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

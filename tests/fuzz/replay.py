"""Rebuild one fuzz input from its series and index, to reproduce a failure outside the suite.

    PYTHONPATH=src python -m tests.fuzz.replay ntrace 16 /tmp/ntrace-16.pb
    PYTHONPATH=src python -m tests.fuzz.replay session_trace.json 3 /tmp/trace-3.json

The series is the name a failure prints before ``#``; the seed is the file of
``tests/data/fuzz-seed`` that series mutates (``device`` and ``import_cuda`` need the imported
CUDA trace, and are rebuilt from ``tests/data/import-cuda-alexnet``).
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
from pathlib import Path

from kinetoscope.format import session_dir as layout
from kinetoscope.importer import trace_import as imp

from .mutate import mutate
from .test_fuzz import CUDA_TRACE, KERNEL_INDEX, SEED

FILES = {"ntrace": "ntrace.pb", "cpu_util": "cpu_util.pb", "host_mem": "host_mem.pb", "trace_info": layout.TRACE_INFO,
         "snapshot": "memory_snapshot_rank0.pickle", "import_cpu": layout.TRACE_JSON}  # fmt: skip


def seed_of(series: str) -> tuple[bytes, bool]:
    """(seed bytes, mutated as JSON) of a series."""
    if series == "kernel_index":
        return json.dumps(KERNEL_INDEX, indent=1).encode(), True
    if series == "import_cuda":
        return gzip.decompress(CUDA_TRACE.read_bytes()), True
    if series == "device":
        with tempfile.TemporaryDirectory() as tmp:
            session = imp.import_trace(CUDA_TRACE, imp.ImportOptions(out_dir=Path(tmp))).session
            assert session is not None
            return (session / "device_0.pb").read_bytes(), False
    name = FILES.get(series) or series.split("_", 1)[1]  # session_<file>, dump_<file>
    return (SEED / name).read_bytes(), name.endswith(".json")


def main(argv: list[str]) -> int:
    series, index, out = argv[0], int(argv[1]), Path(argv[2])
    seed, as_json = seed_of(series)
    out.write_bytes(mutate(seed, series, index, json=as_json))
    print(f"{out}: input {index} of series {series} ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

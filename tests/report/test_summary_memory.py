"""What a summary holds per event: the peak of the numpy and Python memory (``tracemalloc``) and of
Arrow's (a proxy of its memory pool) while every analysis and rule runs over a dataset of tiny
events, the case where the per-event cost is all there is (``benchmarks/memory_bounds.py``)."""

from __future__ import annotations

import contextlib
import io
import json
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kinetoscope.cli import main
from kinetoscope.query import Dataset
from kinetoscope.report.runner import AT_ONCE, made
from kinetoscope.report.settings import ReportOptions

EVENTS = 50_000


def _event(i: int) -> dict[str, Any]:
    """Host ops on four threads; every tenth event a runtime launch, and its kernel."""
    ts = 1000 + i
    if i % 10 == 8:
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts, "dur": 1,
                "args": {"correlation": i}}  # fmt: skip
    if i % 10 == 9:
        return {"ph": "X", "cat": "kernel", "name": f"k{i % 7}", "pid": 0, "tid": 7, "ts": ts, "dur": 1,
                "args": {"correlation": i - 1, "device": 0, "stream": 7}}  # fmt: skip
    return {"ph": "X", "cat": "cpu_op", "name": f"op{i % 13}", "pid": 1, "tid": 1 + i % 4, "ts": ts, "dur": 1}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dataset of ``EVENTS`` tiny events of one rank, imported and ingested."""
    folder = tmp_path_factory.mktemp("tiny")
    head = {"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1}, "baseTimeNanoseconds": 17 * 10**17}
    (folder / "tiny.json").write_text(json.dumps({**head, "traceEvents": [_event(i) for i in range(EVENTS)]}))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["import", str(folder / "tiny.json"), "--out", str(folder / "profile"), "--no-pb"]) == 0
        assert main(["ingest", str(folder / "profile"), "--out", str(folder / "dataset"), "--quiet"]) == 0
    return folder / "dataset"


_COUNTING: list[pa.MemoryPool] = []  # kept to the end: a buffer made in the block may outlive it


@contextlib.contextmanager
def _arrow_counted() -> Iterator[pa.MemoryPool]:
    """Arrow's allocations in the block counted by a pool of their own (the one before, after)."""
    before = pa.default_memory_pool()
    pool = pa.proxy_memory_pool(pa.system_memory_pool())
    _COUNTING.append(pool)
    pa.set_memory_pool(pool)
    try:
        yield pool
    finally:
        pa.set_memory_pool(before)


@pytest.mark.slow
@pytest.mark.serial  # the pool counts every thread of the process: none of another test may run
def test_a_summary_holds_under_60_numpy_and_175_arrow_bytes_per_tiny_event(tiny: Path) -> None:
    # GIVEN a dataset of tiny events, summarised once (the modules and their caches made before counting)
    dataset = Dataset(tiny)
    made(dataset, ReportOptions(threads=1), way=AT_ONCE)
    # WHEN every analysis and rule runs over it, on one thread
    with _arrow_counted() as pool:
        tracemalloc.start()
        try:
            report = made(dataset, ReportOptions(threads=1), way=AT_ONCE)
            numpy_peak_bytes = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        found = len(report.results)
        del report  # its tables go before the pool that counted them
        arrow_peak_bytes = pool.max_memory()
    # THEN the numpy and Python memory peaks under 60 bytes per event (54; 69 while top_ops held every
    # row's self time and its keys in 64 bits, and the roofline counted kernels it did not read; 105
    # while the masks found were kept a byte per row, op_up in 64 bits, the ids looked up through
    # three arrays and the name codes copied to int64), and
    # Arrow's (the columns as read, then the prepared table: 162; 194 while every column was read at
    # once and the dictionary columns copied into one chunk after) under 175
    assert found > 20
    assert numpy_peak_bytes < 60 * EVENTS
    assert arrow_peak_bytes < 175 * EVENTS

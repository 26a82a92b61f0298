"""The session-wide step of ingest (``TraceIngest.finish``): what it allocates per event."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

from kinetoscope.format.kineto import trace_records
from kinetoscope.format.problems import ProblemLog
from kinetoscope.ingest.rows.batch import SessionContext
from kinetoscope.ingest.rows.trace_events import RowSpool, TraceIngest

CTX = SessionContext("trace.json", rank=0, slot=0, session="s", base_ns=1_000_000_000_000, host_pid=1)


def _event(i: int) -> dict[str, Any]:
    """Host ops on four threads; every tenth event a launch, and its kernel."""
    if i % 10 == 8:
        args: dict[str, Any] = {"correlation": i}
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": i, "dur": 1,
                "args": args}
    if i % 10 == 9:
        args = {"correlation": i - 1, "device": 0, "stream": 7}
        return {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": i, "dur": 1, "args": args}
    return {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1 + i % 4, "ts": i, "dur": 1}


def test_finish_allocates_under_250_bytes_per_event(tmp_path: Path) -> None:
    # GIVEN 100,000 tiny events read into a TraceIngest
    count, codec = 100_000, trace_records.codec()
    ingest = TraceIngest(CTX, ProblemLog(), RowSpool(tmp_path / "rows.spool", 8 << 20))
    for start in range(0, count, 10_000):
        ingest.add([(i, codec.from_dict(_event(i))) for i in range(start, start + 10_000)])
    written: list[int] = []
    # WHEN the session-wide step computes and writes its rows
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        ingest.finish(lambda rows: written.append(rows.num_rows))
        peak_bytes = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    # THEN every row is written, and the peak of what it allocated stays under 250 bytes per event
    # (324 before: every computed column and the track keys were whole-session arrays at once)
    assert sum(written) == count
    assert peak_bytes < 250 * count

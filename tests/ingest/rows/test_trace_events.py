"""The session-wide step of ingest (``TraceIngest.finish``): what it allocates per event."""

from __future__ import annotations

import tracemalloc
from pathlib import Path
from typing import Any

from kinetoscope.format.kineto import trace_records
from kinetoscope.format.problems import ProblemLog
from kinetoscope.ingest.rows import links, trace_events
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


def test_finish_allocates_under_130_bytes_per_event(tmp_path: Path) -> None:
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
    # THEN every row is written, and the peak of what it allocated stays under 130 bytes per event
    # (118 now; 139 while row positions (parents, ops, launchers, tracks, the nesting order) were held
    # in 64 bits, the event ids whole, and the track keys made for every row at once; 324 while every
    # computed column and the track keys were whole-session arrays at once)
    assert sum(written) == count
    assert peak_bytes < 130 * count


def _read(tmp_path: Path, events: list[dict[str, Any]]) -> TraceIngest:
    codec = trace_records.codec()
    ingest = TraceIngest(CTX, ProblemLog(), RowSpool(tmp_path / "rows.spool", 8 << 20))
    for start in range(0, len(events), 10_000):
        ingest.add([(i, codec.from_dict(events[i])) for i in range(start, min(len(events), start + 10_000))])
    return ingest


def test_keys_held_while_reading_cost_under_58_bytes_per_event(tmp_path: Path) -> None:
    # GIVEN 100,000 tiny events read into a TraceIngest
    count = 100_000
    ingest = _read(tmp_path, [_event(i) for i in range(count)])
    # WHEN the keys it holds for the session-wide step are counted
    held_bytes = ingest.held_key_bytes
    # THEN they take under 58 bytes per event (56 now; 60 while the event ids were held whole, not as
    # 32-bit offsets from the session's id base; 84 while the process, thread, device, stream,
    # correlation and External id columns were int64 whatever their values)
    assert held_bytes < 58 * count


def test_finish_joins_the_keys_one_at_a_time(tmp_path: Path) -> None:
    # GIVEN 100,000 tiny events read into a TraceIngest, every allocation traced
    count = 100_000
    events = [_event(i) for i in range(count)]
    tracemalloc.start()
    try:
        ingest = _read(tmp_path, events)
        # WHEN the session-wide step runs
        held_bytes = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        ingest.finish(lambda rows: None)
        peak_bytes = tracemalloc.get_traced_memory()[1] - held_bytes
    finally:
        tracemalloc.stop()
    # THEN its peak stays under 75 bytes per event above what the read held (69 now; 91 while row
    # positions were held in 64 bits; 118 while every key's batches and its joined column were held at
    # once, for every key)
    assert peak_bytes < 75 * count


def test_ids_beyond_32_bits_are_kept_as_they_are(tmp_path: Path) -> None:
    # GIVEN a trace whose second batch has a thread id and a correlation beyond 2^31
    events = [_event(i) for i in range(20_000)]
    events[15_000] = {**events[15_000], "tid": 2**40 + 3}
    events[15_008] = {**events[15_008], "args": {"correlation": 2**35}}
    events[15_009] = {**events[15_009], "args": {"correlation": 2**35, "device": 0, "stream": 7}}
    ingest = _read(tmp_path, events)
    written: list[Any] = []
    # WHEN the rows are written
    ingest.finish(written.append)
    # THEN the wide values are written whole, and the launch still finds its kernel
    tids = [tid for rows in written for tid in rows.column("tid").to_pylist()]
    assert tids[15_000] == 2**40 + 3 and tids[14_997] == 1 + 14_997 % 4
    launch_ids = [launch for rows in written for launch in rows.column("launch_id").to_pylist()]
    ids = [event_id for rows in written for event_id in rows.column("id").to_pylist()]
    assert launch_ids[15_009] == ids[15_008]


def test_a_trace_without_flow_events_sorts_no_copies_for_them(tmp_path: Path, monkeypatch: Any) -> None:
    # GIVEN a trace of launches and kernels without flow events ("s"/"f"), read into a TraceIngest
    ingest = _read(tmp_path, [_event(i) for i in range(1_000)])
    made: list[int] = []
    original = links.SliceFinder
    monkeypatch.setattr(links, "SliceFinder", lambda *args: made.append(1) or original(*args))
    # WHEN the session-wide step runs
    ingest.finish(lambda rows: None)
    # THEN no slice finder (sorted copies of two whole-session columns) was made, and no flow end is unbound
    assert made == [] and ingest.stats.unbound_flow_ends == 0


def test_only_a_large_session_walks_the_heap(tmp_path: Path, monkeypatch: Any) -> None:
    # GIVEN the heap's free pages counted as they are handed back
    calls: list[int] = []
    monkeypatch.setattr(trace_events, "release_freed_memory", lambda: calls.append(1) or True)
    # WHEN a session of 2,000 events is ingested below the size that hands pages back, then above it
    _read(tmp_path, [_event(i) for i in range(2_000)]).finish(lambda rows: None)
    small = len(calls)
    monkeypatch.setattr(trace_events, "HAND_BACK_MIN_EVENTS", 1_000)
    _read(tmp_path, [_event(i) for i in range(2_000)]).finish(lambda rows: None)
    # THEN the small one walked the heap never, the large one after each of its 14 keys was joined and
    # between its steps (3)
    assert small == 0 and len(calls) == 14 + 3

"""The profiling window and host pid of a trace, read from the few events that hold them."""

from __future__ import annotations

import hashlib
import json
import mmap
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.format.kineto import event_stream, kineto_json
from kinetoscope.format.session_files import trace_info as ti
from kinetoscope.importer import trace_facts as imp
from kinetoscope.importer.trace_import import ImportOptions, import_trace

SPAN = {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "t", "ts": 10, "dur": 90}
HOST = {"name": "process_name", "ph": "M", "pid": 42, "tid": 0, "args": {"name": "python"}}
GPU = {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}}
KERNEL = {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "dur": 1}
OP = {"ph": "X", "cat": "cpu_op", "name": "aten::mm \u00e9", "pid": 42, "tid": 42, "ts": 5, "dur": 1, "args": {"a": []}}


def write(tmp_path: Path, events: list[Any], indent: int | None = 2) -> Path:
    path = tmp_path / "t.json"
    body = ",\n".join(json.dumps(event, indent=indent) for event in events)
    path.write_text('{"schemaVersion": 1, "deviceProperties": [{"id": 0}, {"id": 1}], "traceEvents": [\n' + body + "]}")
    return path


def test_the_facts_are_found_wherever_they_stand(tmp_path: Path) -> None:
    # GIVEN the facts first, in the middle and last, in either layout
    cases = (
        ([GPU, HOST, OP, SPAN], imp.TraceFacts(window_us=(10, 100), pid=42)),
        ([OP, SPAN, OP, GPU, OP, HOST], imp.TraceFacts(window_us=(10, 100), pid=42)),
        ([SPAN, {**SPAN, "ts": 5, "dur": 200}], imp.TraceFacts(window_us=(5, 205), pid=None)),
    )
    for indent in (None, 2):
        for events, expected in cases:
            # THEN the window covers every span, and the pid is the host process's (not a device's)
            assert imp.scan_facts(write(tmp_path, events, indent)) == expected
    assert imp.scan_facts(write(tmp_path, [OP, SPAN, HOST])) == imp.TraceFacts(window_us=(10, 100), pid=42)


def test_a_damaged_fact_event_is_skipped(tmp_path: Path) -> None:
    # GIVEN a damaged span event (not valid JSON) next to a good one
    path = write(tmp_path, [HOST, OP, SPAN], indent=None)
    text = path.read_text().replace('"ph": "X", "cat": "Trace"', '"ph": "X", oops, "cat": "Trace"', 1)
    path.write_text(text)
    # THEN it is skipped, as the reader skips it, and the rest is found (with no window, the start
    # comes from the first events)
    assert imp.scan_facts(path) == imp.TraceFacts(window_us=None, pid=42, first_ts_us=5.0)


def _import(trace: Path, out: Path) -> Any:
    result = import_trace(trace, ImportOptions(out_dir=out))
    assert result.session is not None and result.stats is not None
    return result


def test_the_head_and_tail_blocks_foresee_the_facts_the_conversion_notes(tmp_path: Path) -> None:
    # GIVEN the facts where Kineto writes them (after the activities) and a small tail block
    events = [{**OP, "ts": 10 + i} for i in range(200)] + [GPU, HOST, SPAN]
    path = write(tmp_path, events)
    ends = kineto_json.read_ends(path, imp.FACTS_RE)
    # THEN the blocks show the facts a read of every event finds
    assert imp.foreseen(ends) == imp.scan_facts(path) == imp.TraceFacts(window_us=(10, 100), pid=42)


def test_facts_between_the_blocks_are_taken_from_the_conversion(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN the same events with the span and the host's name last, or amid the events, beyond a
    # head and tail blocks too small to show them; events before and after the span's window
    monkeypatch.setattr(kineto_json, "TAIL_BYTES", 2048)
    monkeypatch.setattr(event_stream, "FIRST_VALUES_BYTES", 1024)
    kernels = [{**KERNEL, "ts": ts, "args": {"correlation": ts}} for ts in range(0, 200, 2)]
    last = write(tmp_path, [*kernels, GPU, HOST, SPAN], indent=None)
    (tmp_path / "last.json").write_bytes(last.read_bytes())
    amid = write(tmp_path, [*kernels[:50], GPU, HOST, SPAN, *kernels[50:]], indent=None)
    assert imp.foreseen(kineto_json.read_ends(amid, imp.FACTS_RE)) != imp.scan_facts(amid)
    # WHEN both are imported
    results = [_import(trace, tmp_path / name) for trace, name in ((tmp_path / "last.json", "a"), (amid, "b"))]
    # THEN both sessions are the host's, span its window, and skip the same events outside it
    infos = [ti.read_trace_info(result.session) for result in results]
    for info in infos:
        assert info.identity.pid == 42
        assert (info.start_clocks.realtime_ns, info.stop_clocks.realtime_ns) == (10_000, 100_000)
    assert [r.stats.device_events for r in results] == [46, 46]  # ts 10..100 (dur 1 at 8 reaches 9: outside)
    assert [r.problems.counts() for r in results] == [{"outside_window": 54}] * 2
    assert [r.session.name for r in results] == [results[0].session.name] * 2
    # AND the first conversion of the second leaves no file behind
    assert sorted(p.name for p in results[1].session.iterdir()) == sorted(p.name for p in results[0].session.iterdir())


def test_the_selective_scan_finds_what_a_full_pass_notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the facts anywhere in the trace, beyond head and tail blocks too small to show them
    monkeypatch.setattr(kineto_json, "TAIL_BYTES", 2048)
    monkeypatch.setattr(event_stream, "FIRST_VALUES_BYTES", 1024)
    kernels = [{**KERNEL, "ts": ts, "args": {"correlation": ts}} for ts in range(0, 200, 2)]
    cases = ([*kernels[:50], GPU, HOST, SPAN, *kernels[50:]], [OP, *kernels, {**SPAN, "ts": 5, "dur": 200}], [OP, GPU])
    for indent in (None, 2):
        for events in cases:
            path = write(tmp_path, events, indent)
            ends = kineto_json.read_ends(path, imp.FACTS_RE)
            # THEN the scan that parses only the matching events finds the facts every event shows
            assert imp.scan_selected(path, ends) == imp.scan_facts(path)


def test_the_selective_scan_reads_blocks_and_takes_each_event_at_any_boundary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN facts amid many events, read in blocks far smaller than the trace, each window keeping
    # a picked event's room before and after it
    monkeypatch.setattr(kineto_json, "TAIL_BYTES", 2048)
    monkeypatch.setattr(event_stream, "FIRST_VALUES_BYTES", 1024)
    monkeypatch.setattr(kineto_json, "MAX_PICKED_EVENT_BYTES", 512)
    monkeypatch.setattr(imp, "_KEPT_BYTES", 512 + 256)
    kernels = [{**KERNEL, "ts": ts, "args": {"correlation": ts}} for ts in range(0, 200, 2)]
    spans = [{**SPAN, "ts": 20 + i, "dur": 10} for i in range(0, 60, 3)]
    cases = ([*kernels[:50], GPU, HOST, SPAN, *kernels[50:]], [OP, *kernels, *spans, GPU, *kernels, HOST], [OP, GPU])
    # WHEN the file may not be mapped (a mapped file's every page counts in the resident memory)

    def unmapped(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the scan maps the file")

    monkeypatch.setattr(mmap, "mmap", unmapped)
    for block in (97, 512, 1000, 1 << 20):
        monkeypatch.setattr(imp, "SCAN_BLOCK_BYTES", block)
        for indent in (None, 2):
            for events in cases:
                path = write(tmp_path, events, indent)
                ends = kineto_json.read_ends(path, imp.FACTS_RE)
                # THEN every block size finds the facts a full pass notes, and hashes the whole file
                hasher, whole = hashlib.sha256(), hashlib.sha256(path.read_bytes())
                assert imp.scan_selected(path, ends, hasher) == imp.scan_facts(path), (block, indent)
                assert hasher.hexdigest() == whole.hexdigest()
                # AND so does a scan fed the same blocks by a copy (from memory, as they are written)
                assert _fed(path.read_bytes(), block).completed(ends) == imp.scan_facts(path), (block, indent)


def _fed(data: bytes, block: int) -> imp.FactScan:
    scan = imp.FactScan()
    for start in range(0, len(data), block):
        scan.feed(data[start : start + block])
    scan.feed(b"")
    return scan

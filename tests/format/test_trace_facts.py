"""The profiling window and host pid of a trace, read from the few events that hold them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kinetoscope.importer import trace_facts as imp

SPAN = {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "t", "ts": 10, "dur": 90}
HOST = {"name": "process_name", "ph": "M", "pid": 42, "tid": 0, "args": {"name": "python"}}
GPU = {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}}
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

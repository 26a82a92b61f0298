"""The profiling window and host pid of a trace, found by literal search or, when unclear, by a pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kinetoscope.format import trace_import as imp

SPAN = {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "t", "ts": 10, "dur": 90}
HOST = {"name": "process_name", "ph": "M", "pid": 42, "tid": 0, "args": {"name": "python"}}
GPU = {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}}
OP = {"ph": "X", "cat": "cpu_op", "name": "aten::mm \u00e9", "pid": 42, "tid": 42, "ts": 5, "dur": 1, "args": {"a": []}}


def write(tmp_path: Path, events: list[Any], indent: int | None = 2) -> Path:
    path = tmp_path / "t.json"
    body = ",\n".join(json.dumps(event, indent=indent) for event in events)
    path.write_text('{"schemaVersion": 1, "deviceProperties": [{"id": 0}, {"id": 1}], "traceEvents": [\n' + body + "]}")
    return path


def test_search_finds_what_the_pass_finds(tmp_path: Path) -> None:
    # GIVEN the facts first, in the middle and last, in either layout
    for indent in (None, 2):
        for events in ([GPU, HOST, OP, SPAN], [OP, SPAN, OP, GPU, OP, HOST], [SPAN, {**SPAN, "ts": 5, "dur": 200}]):
            path = write(tmp_path, events, indent)
            # THEN the search and the pass agree, and the search did not give up
            found = imp._facts_by_search(path)
            assert found is not None and found == imp._facts_by_pass(path) == imp.scan_facts(path)
    assert imp.scan_facts(write(tmp_path, [OP, SPAN, HOST])) == imp.TraceFacts(window_us=(10, 100), pid=42)


def test_unclear_events_fall_back_to_the_pass(tmp_path: Path) -> None:
    # GIVEN a damaged span event (not valid JSON) next to a good one
    path = write(tmp_path, [HOST, OP, SPAN], indent=None)
    text = path.read_text().replace('"ph": "X", "cat": "Trace"', '"ph": "X", oops, "cat": "Trace"', 1)
    path.write_text(text)
    # THEN the search gives up, and the pass skips the damaged event as the reader does
    assert imp._facts_by_search(path) is None
    assert imp.scan_facts(path) == imp.TraceFacts(window_us=None, pid=42)

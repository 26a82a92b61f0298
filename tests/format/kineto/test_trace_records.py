"""Records (``iter_trace_records``) carry exactly what the dict reader gives, on good and damaged traces."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.format.kineto import kineto_json, trace_records
from kinetoscope.format.kineto.kineto_json import iter_trace_events, iter_trace_records
from kinetoscope.format.problems import ProblemLog

from ...conftest import use_record_codec

EVENTS: list[Any] = [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.5, "dur": 3, "args": {"a": [1]}},
    {"ph": "X", "cat": "kernel", "name": "k\u00e9rnel }, {", "pid": 0, "tid": "stream 7", "ts": 12, "dur": 1},
    {"ph": "s", "cat": "ac2g", "id": 18446744073709551617, "pid": 1, "tid": 1, "ts": 11, "bp": "e"},
    {
        "ph": "i",
        "cat": "cpu_instant_event",
        "name": "[memory]",
        "pid": 1,
        "tid": 1,
        "ts": 13,
        "s": "t",
        "args": {"Bytes": -4, "Addr": 1 << 70, "nested": {"x": [1.5, None, "y"]}},
    },
    {"ph": "X", "name": 7, "ts": "late", "args": "not an object", "extra": {"ignored": True}},
]


def _body(events: list[Any]) -> str:
    return ",\n".join("  " + json.dumps(e, indent=2).replace("\n", "\n  ") for e in events)


def _trace(body: str, tail: str = '\n  ],\n  "traceName": "t"\n}') -> bytes:
    return ('{\n  "schemaVersion": 1,\n  "traceEvents": [\n' + body + tail).encode("utf-8", "surrogateescape")


CASES = {
    "whole": _trace(_body(EVENTS)),
    "truncated": _trace(_body(EVENTS))[:-60],
    "garbage event": _trace(_body(EVENTS[:2]) + ",\n  {garbage},\n" + _body(EVENTS[2:])),
    "not an object": _trace(_body(EVENTS[:2]) + ",\n  42,\n  [1],\n" + _body(EVENTS[2:])),
    "bad utf-8": _trace(
        _body(EVENTS[:1]) + ',\n  {"ph": "X", "name": "\udcff\udcfe", "args": {"k": "\udcff"}},\n' + _body(EVENTS[1:])
    ),
    # msgspec checks the strings it decodes, not the args it copies nor the keys it skips
    "bad utf-8 in args only": _trace(
        _body(EVENTS[:1]) + ',\n  {"ph": "X", "args": {"k": "\udcff"}, "x": "\udcfe"},\n' + _body(EVENTS[1:])
    ),
}


def _loose(value: Any) -> Any:
    """Ints beyond 64 bits compared as floats: orjson gives them as floats, msgspec and the stdlib exactly."""
    return float(value) if type(value) is int and abs(value) >= 1 << 64 else value


def _read(path: Path, reader: Any) -> tuple[list[tuple[int, Any]], list[str]]:
    problems = ProblemLog()
    got = [item for batch in reader(path, problems, batch_size=2) for item in batch]
    return got, [str(p) for p in problems.records]


@pytest.fixture(params=["msgspec", "dicts"])
def codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> trace_records.RecordCodec:
    """The msgspec codec when installed, and the fallback the capture path uses without it."""
    return use_record_codec(str(request.param), monkeypatch)


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("compress", [False, True])
def test_records_match_the_dict_reader(
    tmp_path: Path, codec: trace_records.RecordCodec, case: str, compress: bool
) -> None:
    # GIVEN a trace, whole or damaged, plain or gzip-compressed
    data = CASES[case]
    path = tmp_path / ("t.json.gz" if compress else "t.json")
    path.write_bytes(gzip.compress(data) if compress else data)
    # WHEN it is read as dicts and as records
    dicts, dict_problems = _read(path, iter_trace_events)
    records, record_problems = _read(path, iter_trace_records)
    # THEN the same events come back at the same indexes, with the same fields, args and problems
    assert [i for i, _ in records] == [i for i, _ in dicts]
    assert record_problems == dict_problems
    args = codec.args([r for _, r in records])
    for (_, event), (_, record), record_args in zip(dicts, records, args, strict=True):
        assert {f: _loose(getattr(record, f)) for f in trace_records.FIELDS} == {
            f: _loose(event.get(f)) for f in trace_records.FIELDS
        }
        assert record_args == (event["args"] if isinstance(event.get("args"), dict) else {})
    assert len(records) >= 3


def test_raw_args_are_the_recorded_json(tmp_path: Path, codec: trace_records.RecordCodec) -> None:
    # GIVEN events with and without args
    path = tmp_path / "t.json"
    path.write_bytes(_trace(_body(EVENTS)))
    # WHEN read as records
    records = [r for batch in iter_trace_records(path, ProblemLog()) for _, r in batch]
    # THEN args is JSON text that parses to the recorded args, and empty where there were none
    assert json.loads(bytes(records[0].args)) == {"a": [1]}
    assert bytes(records[1].args) == b""
    assert json.loads(bytes(records[3].args))["Addr"] == 1 << 70


def test_batch_size_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(_trace(_body(EVENTS)))
    with pytest.raises(ValueError, match="batch_size"):
        next(iter_trace_records(path, ProblemLog(), batch_size=0))


def test_records_are_read_in_batches(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(_trace(_body(EVENTS * 5)))
    batches = list(kineto_json.iter_trace_records(path, ProblemLog(), batch_size=4))
    assert [len(b) for b in batches] == [4] * 6 + [1]


KEYS = trace_records.ArgKeys(external="External id", stack="Call stack", addr="Addr")


def test_known_args_hold_only_the_asked_keys(codec: trace_records.RecordCodec) -> None:
    # GIVEN args texts: indented, compact, absent, not an object, and with keys nobody asked for
    raws = [
        b'{\n  "External id": 7,\n  "Input Dims": [[1, 2]]\n}',
        b'{"Call stack":"a.py(1): f","Addr":18446744073709551617}',
        b"",
        b'"not an object"',
        b'{"other": {"External id": 1}}',
    ]
    # WHEN the asked keys are decoded for the batch
    got = codec.known_args(raws, KEYS)
    # THEN each holds its value, None where absent (nested keys are not top-level keys)
    assert [(a.external, a.stack, _loose(a.addr)) for a in got] == [
        (7, None, None),
        (None, "a.py(1): f", _loose(1 << 64 | 1)),
        (None, None, None),
        (None, None, None),
        (None, None, None),
    ]


def test_compact_args_are_the_recorded_args_without_spaces(tmp_path: Path, codec: trace_records.RecordCodec) -> None:
    # GIVEN a trace indented over several lines, as Kineto writes it
    path = tmp_path / "t.json"
    path.write_bytes(_trace(_body(EVENTS)))
    records = [r for batch in iter_trace_records(path, ProblemLog()) for _, r in batch]
    # WHEN the args are made compact
    texts = codec.compact_args(records)
    # THEN each is the recorded args object on one line, and {} where there was none or not an object
    assert texts[0] == b'{"a":[1]}'
    assert texts[1] == b"{}" and texts[4] == b"{}"
    assert json.loads(texts[3]) == {"Bytes": -4, "Addr": 1 << 70, "nested": {"x": [1.5, None, "y"]}}
    assert all(b"\n" not in t and b": " not in t for t in texts)

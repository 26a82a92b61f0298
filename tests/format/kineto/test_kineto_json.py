"""The streaming Kineto JSON reader: layouts, compression, damage, big ids, both decoders."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.format.kineto import event_stream, kineto_json
from kinetoscope.format.kineto.kineto_json import iter_selected_events, iter_trace_events, read_trace_metadata
from kinetoscope.format.problems import ProblemLog

EVENTS = [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10.5, "dur": 3, "args": {"a": [1]}},
    {"ph": "X", "cat": "kernel", "name": "k\u00e9rnel }, {", "pid": 0, "tid": 7, "ts": 12, "dur": 1},
    {"ph": "s", "cat": "ac2g", "id": 5, "pid": 1, "tid": 1, "ts": 11},
]
HEAD = {"schemaVersion": 1, "deviceProperties": [{"id": 0}], "distributedInfo": {"rank": 3, "world_size": 4}}
TAIL = {"traceName": "x.json", "baseTimeNanoseconds": 1_700_000_000_000_000_000}


def kineto_layout(events: list[Any]) -> str:
    """Kineto's own layout: header keys, then one event over several lines, then trailing keys."""
    head = ",\n".join(f"  {json.dumps(k)}: {json.dumps(v)}" for k, v in HEAD.items())
    body = ",\n".join("  " + json.dumps(e, indent=2).replace("\n", "\n  ") for e in events)
    tail = ", ".join(f"{json.dumps(k)}: {json.dumps(v)}" for k, v in TAIL.items())
    return "{\n" + head + ',\n  "traceEvents": [\n' + body + "\n  ],\n  " + tail + "\n}"


def one_line(events: list[Any]) -> str:
    return json.dumps({**HEAD, "traceEvents": events, **TAIL})


def read_all(path: Path, batch_size: int = 2, **kwargs: Any) -> tuple[list[tuple[int, Any]], ProblemLog]:
    problems = ProblemLog()
    batches = list(iter_trace_events(path, problems, batch_size=batch_size, **kwargs))
    assert all(0 < len(batch) <= batch_size for batch in batches)
    return [item for batch in batches for item in batch], problems


@pytest.fixture(params=["orjson", "json"])
def decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "json":
        monkeypatch.setattr(event_stream, "fast_loads", lambda: ("json", json.loads))
    return str(request.param)


@pytest.mark.parametrize("layout", [kineto_layout, one_line])
@pytest.mark.parametrize("compress", [False, True])
def test_reads_every_layout_plain_and_gzip(tmp_path: Path, decoder: str, layout: Any, compress: bool) -> None:
    # GIVEN a trace in Kineto's multi-line layout or on one line, plain or gzip-compressed
    text = layout(EVENTS).encode()
    path = tmp_path / ("t.json.gz" if compress else "t.json")
    path.write_bytes(gzip.compress(text) if compress else text)
    # WHEN it is read in batches of two
    got, problems = read_all(path)
    # THEN every event comes back with its index, and the metadata from head and tail
    assert got == list(enumerate(EVENTS))
    assert not problems
    assert read_trace_metadata(path) == {**HEAD, **TAIL}


def test_small_chunks_cut_events_anywhere(tmp_path: Path, decoder: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN chunks far smaller than one event, so every event straddles chunk ends
    monkeypatch.setattr(event_stream, "CHUNK_BYTES", 7)
    path = tmp_path / "t.json"
    many = [dict(EVENTS[i % 3], ts=i) for i in range(50)]
    path.write_text(kineto_layout(many))
    got, problems = read_all(path, batch_size=8)
    assert [event for _, event in got] == many
    assert not problems


def test_spans_cut_inside_args_are_still_read_in_one_decode(
    tmp_path: Path, decoder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN events whose args hold objects and arrays of objects ("}," and "}, {" inside an
    # event), read in chunks small enough that many chunks end inside an event's args
    monkeypatch.setattr(event_stream, "CHUNK_BYTES", 1500)
    walked: list[bool] = []
    scan = event_stream._EventStream._scan

    def spy(self: Any, final: bool, stop_byte: int) -> Any:
        walked.append(final)
        return scan(self, final, stop_byte)

    monkeypatch.setattr(event_stream._EventStream, "_scan", spy)
    args = {"shapes": [{"dims": [4, 4]}, {"dims": [2]}], "outer": {"inner": 1}, "n": 3}
    many = [{"ph": "X", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1, "args": args} for i in range(60)]
    path = tmp_path / "t.json"
    path.write_text(kineto_layout(many))
    # WHEN it is read
    got, problems = read_all(path, batch_size=8)
    # THEN every event comes back, and the spans were decoded whole: at most the last event of
    # the array (read before the end of the file is) is walked event by event before the end
    assert [event for _, event in got] == many
    assert not problems
    assert walked.count(False) <= 1


def test_bare_array_without_closing_bracket(tmp_path: Path, decoder: str) -> None:
    # GIVEN a Chrome-style bare array cut after the last event (allowed by the Chrome trace format)
    path = tmp_path / "t.json"
    path.write_text("[" + ",\n".join(json.dumps(e) for e in EVENTS))
    got, problems = read_all(path)
    assert [e for _, e in got] == EVENTS
    assert problems.counts() == {"truncated": 1}
    assert read_trace_metadata(path) == {}


def test_truncated_file_keeps_what_was_written(tmp_path: Path, decoder: str) -> None:
    # GIVEN a trace cut in the middle of its third event
    text = kineto_layout(EVENTS)
    cut = text.index('"ac2g"')
    path = tmp_path / "t.json"
    path.write_text(text[:cut])
    got, problems = read_all(path)
    # THEN the first two events are kept and the cut is reported at event 2
    assert [e for _, e in got] == EVENTS[:2]
    assert problems.counts() == {"truncated": 1}
    assert problems.records[0].where == "event 2"
    assert read_trace_metadata(path) == HEAD


def test_truncated_gzip_stream(tmp_path: Path, decoder: str) -> None:
    many = [dict(EVENTS[0], ts=i) for i in range(2000)]
    data = gzip.compress(kineto_layout(many).encode())
    path = tmp_path / "t.json.gz"
    path.write_bytes(data[: len(data) // 2])
    got, problems = read_all(path, batch_size=500)
    assert 0 < len(got) < len(many)
    assert [e for _, e in got] == many[: len(got)]
    assert problems.counts()["truncated"] >= 1
    assert str(path) in str(problems.records[0])


def test_garbage_in_the_middle_is_skipped_and_counted(tmp_path: Path, decoder: str) -> None:
    # GIVEN a damaged event and a value that is not an object between good events
    good = [json.dumps(e) for e in EVENTS]
    body = ",\n".join([good[0], "42", '{"ph": "X", "name": oops}', good[1], good[2]])
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [\n' + body + "\n]}")
    got, problems = read_all(path)
    # THEN the good events keep their positions in the array, and each bad one is named
    assert got == [(0, EVENTS[0]), (3, EVENTS[1]), (4, EVENTS[2])]
    assert problems.counts() == {"malformed_json": 1, "not_an_object": 1}
    assert sorted(p.where for p in problems.records) == ["event 1", "event 2"]


def test_ids_above_two_to_the_63(tmp_path: Path, decoder: str) -> None:
    big = [{"ph": "X", "args": {"Comms Id": 10159970886766084423}}, {"ph": "f", "id": 2**64 + 5}]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": big}))
    got, problems = read_all(path)
    assert [e for _, e in got] == big
    assert not problems


def test_invalid_utf8_is_kept_readable(tmp_path: Path, decoder: str) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(b'{"traceEvents": [{"name": "a\xff"}, {"name": "b"}]}')
    got, problems = read_all(path)
    assert [e["name"] for _, e in got] == ["a\ufffd", "b"]
    assert problems.counts() == {"invalid_utf8": 1}


def test_not_a_trace(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"nodes": []}')
    got, problems = read_all(path)
    assert got == []
    assert problems.counts() == {"no_trace_events": 1}
    path.write_text("hello")
    got, problems = read_all(path)
    assert problems.counts() == {"malformed_json": 1}


def test_problem_log_keeps_few_records_but_counts_all() -> None:
    log = ProblemLog(max_per_kind=2)
    for index in range(5):
        log.add("f.json", f"event {index}", "malformed_json", "bad")
    log.add("f.json", "event 9", "truncated", "cut")
    assert log.counts() == {"malformed_json": 5, "truncated": 1}
    assert len(log.records) == 3
    assert log.summary_lines()[-1] == "... 3 more problem(s) of kind 'malformed_json' not shown"


@pytest.mark.parametrize("layout", [kineto_layout, one_line])
def test_selected_events_are_those_the_pattern_finds(
    tmp_path: Path, decoder: str, layout: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN many events read in small chunks, some kernels, one of them with "}, {" inside its name
    monkeypatch.setattr(event_stream, "CHUNK_BYTES", 4096)
    many = [dict(EVENTS[i % 3], ts=i, name="k" if i != 151 else "a }, {") for i in range(300)]
    path = tmp_path / "t.json"
    path.write_text(layout(many))
    select = re.compile(rb'"cat":\s*"kernel"')
    # WHEN only kernels are selected
    got = [e for batch in iter_selected_events(path, ProblemLog(), select, batch_size=7) for _, e in batch]
    # THEN every kernel comes back, in order, as a full parse gives it (a region whose events
    # could not be cut out cleanly, here the one with "}, {" in a name, comes back whole)
    kernels = [e for e in many if e.get("cat") == "kernel"]
    assert [e for e in got if e.get("cat") == "kernel"] == kernels
    assert len(got) < len(many)


def test_selected_positions_are_byte_offsets(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(one_line(EVENTS))
    ((offset, event),) = next(iter_selected_events(path, ProblemLog(), re.compile(rb'"cat": "ac2g"')))
    assert json.loads(path.read_bytes()[offset:].split(b"}", 1)[0] + b"}") == event


SEED_TRACE = Path(__file__).resolve().parents[2] / "data" / "fuzz-seed" / "trace.json"


def _events_kept(path: Path, data: bytes) -> tuple[int, ProblemLog]:
    path.write_bytes(data)
    problems = ProblemLog()
    return sum(len(batch) for batch in iter_trace_events(path, problems)), problems


def test_one_damaged_byte_in_the_header_costs_header_keys_not_events(tmp_path: Path) -> None:
    # A real capture's header (316 bytes before its first event). Every byte, replaced by one that
    # breaks the JSON in a different way, used to lose the whole trace in about a third of places.
    data = SEED_TRACE.read_bytes()
    header_end = data.index(b'"traceEvents"') + len(b'"traceEvents": [')
    clean, _ = _events_kept(tmp_path / "clean.json", data)
    for at in range(1, header_end - 1):
        for byte in (b"#", b"{", b'"', b"}", b":", b"\xff"):
            damaged = data[:at] + byte + data[at + 1 :]
            kept, problems = _events_kept(tmp_path / "t.json", damaged)
            where = f"byte {at} set to {byte!r}"
            assert kept >= clean - 1, where
            if damaged != data and kept < clean:
                assert problems.total(), where


def test_a_header_whose_array_key_is_damaged_is_read_and_says_so(tmp_path: Path) -> None:
    data = SEED_TRACE.read_bytes().replace(b'"traceEvents"', b'"traceEvent#"', 1)
    kept, problems = _events_kept(tmp_path / "t.json", data)
    clean, _ = _events_kept(tmp_path / "clean.json", SEED_TRACE.read_bytes())
    assert kept == clean
    assert any("traceEvent#" in record.message for record in problems.records)


def _count_parsed_chars(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    parsed: list[int] = []
    real = event_stream.parse_head

    def counting(text: str, *args: Any) -> Any:
        parsed.append(len(text))
        return real(text, *args)

    monkeypatch.setattr(event_stream, "parse_head", counting)
    return parsed


@pytest.mark.parametrize("where", ["before", "inside"])
def test_blanks_in_the_header_are_parsed_a_bounded_number_of_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    # GIVEN a trace with 16 MB of blanks before its header, or between two of its keys
    blanks = " " * (16 << 20)
    text = f'{blanks}{{"a": 1, "traceEvents": [{json.dumps(EVENTS[0])}]}}' if where == "before" else (
        f'{{"a": 1,{blanks}"traceEvents": [{json.dumps(EVENTS[0])}]}}'
    )
    path = tmp_path / "t.json"
    path.write_text(text)
    parsed = _count_parsed_chars(monkeypatch)
    # WHEN its head is read (128 KiB at a time) and its events
    ends = kineto_json.read_head_values(path)
    got, problems = read_all(path)
    # THEN the header text parsed in all is a small multiple of the file (before: 1,000 times it)
    assert ends.found_array and ends.metadata == {"a": 1}
    assert [event for _, event in got] == [EVENTS[0]] and not problems
    assert sum(parsed) < 8 * len(text)


def test_a_header_longer_than_the_bound_is_damage_not_a_read_of_the_whole_file(tmp_path: Path) -> None:
    # GIVEN a header whose one key holds a 65 MiB string before the event array
    path = tmp_path / "t.json"
    path.write_text(f'{{"a": "{"x" * (65 << 20)}", "traceEvents": [{json.dumps(EVENTS[0])}]}}')
    # WHEN its events are read THEN the header is damage: the array is still found and read
    got, problems = read_all(path)
    assert [event for _, event in got] == [EVENTS[0]]
    assert any("longer than 64 MiB" in problem.message for problem in problems.records)


@pytest.mark.parametrize("cut", [1, 4, 12])
def test_a_file_cut_in_the_keys_after_the_events_is_truncated(tmp_path: Path, cut: int) -> None:
    # GIVEN an older Kineto trace whose last key is baseTimeNanoseconds, cut a few bytes short
    text = kineto_layout(EVENTS)
    assert text.endswith('"baseTimeNanoseconds": 1700000000000000000\n}')
    path = tmp_path / "t.json"
    path.write_text(text[:-cut])
    # WHEN its events are read THEN every event is read and the cut is a truncation problem
    got, problems = read_all(path)
    assert [event for _, event in got] == EVENTS
    assert problems.counts() == {"truncated": 1}
    assert "baseTimeNanoseconds" in problems.records[0].message


@pytest.mark.parametrize("text", [one_line(EVENTS), kineto_layout(EVENTS) + "\n\n", json.dumps(EVENTS)])
def test_a_whole_file_has_no_trailer_problem(tmp_path: Path, text: str) -> None:
    path = tmp_path / "t.json"
    path.write_text(text)
    got, problems = read_all(path)
    assert len(got) == len(EVENTS) and not problems


def test_a_second_trace_events_key_is_said_not_silently_dropped(tmp_path: Path) -> None:
    # GIVEN a trace with two traceEvents keys (json and orjson read the second, this reader the first)
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": EVENTS[:1]})[:-1] + ', "traceEvents": ' + json.dumps(EVENTS[1:]) + "}")
    assert json.loads(path.read_text())["traceEvents"] == EVENTS[1:]
    # WHEN its events are read THEN the first array is read, with a duplicate_key problem saying so
    got, problems = read_all(path)
    assert [event for _, event in got] == EVENTS[:1]
    assert problems.counts() == {"duplicate_key": 1}
    assert "json and orjson would read the second" in problems.records[0].message

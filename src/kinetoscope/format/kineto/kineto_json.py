"""Streaming reader of Kineto JSON traces (torch.profiler's ``export_chrome_trace`` output).

A trace is ``{"schemaVersion": 1, ..., "traceEvents": [ {event}, ... ], "traceName": ...}``,
plain or gzip-compressed, sometimes a bare ``[ {event}, ... ]`` array. Layouts vary: Kineto
writes each event over several lines, other tools write one event per line or the whole file
on one line. The reader does not depend on the layout:

* It reads the file in chunks of a few MiB and cuts each chunk after its last ``}`` that is
  followed by a comma. When the text between two cuts parses as a JSON array body, every value
  in it is a whole event (parsing from a known value boundary is deterministic, so a cut that
  parses cannot fall inside a string). That span is decoded in one call, with orjson when it is
  installed and the standard library otherwise.
* A span that does not parse (garbage, a truncated event, numbers beyond 64 bits, a cut inside a
  string) is walked event by event with the standard library's ``raw_decode``, which finds the
  bad events, records them in the ``ProblemLog`` and resumes at the next event.

Memory stays bounded by the chunk and batch sizes, whatever the size of the file.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kinetoscope._errors import FormatError
from kinetoscope.format.kineto import json_spans, trace_records
from kinetoscope.format.kineto.event_stream import _EventStream
from kinetoscope.format.kineto.json_head import DECODER, to_text
from kinetoscope.format.kineto.trace_records import TraceRecord
from kinetoscope.format.kineto.trace_source import TraceSource, is_gzip
from kinetoscope.format.problems import NOT_AN_OBJECT, ProblemLog

Event = dict[str, Any]
IndexedEvent = tuple[int, Event]

DEFAULT_BATCH_SIZE = 50_000
HEAD_BLOCK_BYTES = 128 << 10  # read at a time by the looks at a trace's head (more when its header is longer)
TAIL_BYTES = 1 << 20  # the end of a trace read for the keys after its events
MAX_PICKED_EVENT_BYTES = 64 << 10  # an event picked out of the tail longer than this is left out


def iter_trace_events(
    path: Path, problems: ProblemLog, batch_size: int = DEFAULT_BATCH_SIZE, *, label: str | None = None
) -> Iterator[list[IndexedEvent]]:
    """Batches of ``(event index, event)`` from ``path``'s ``traceEvents``, in file order.

    Streams: memory is bounded by ``batch_size`` and the read chunk, not by the file size.
    Unreadable events, values that are not objects, truncation and damaged compression are
    recorded in ``problems`` (file, event index or byte, what is wrong) and skipped; every
    event that can be read is returned. ``label`` names the file in problems (default: ``path``).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    stream = _EventStream(path, problems, label)
    yield from _batches(stream, batch_size, lambda values: _objects_only(values, stream.file, problems))


def iter_trace_records(
    path: Path,
    problems: ProblemLog,
    batch_size: int = DEFAULT_BATCH_SIZE,
    *,
    label: str | None = None,
    hasher: Any = None,
) -> Iterator[list[tuple[int, TraceRecord]]]:
    """Like ``iter_trace_events``, with each event as a ``TraceRecord`` (see ``trace_records``).

    The faster reader for passes that touch every event: with msgspec installed, spans are
    decoded straight into records. Damaged spans are read event by event exactly as in
    ``iter_trace_events``, with the same problems recorded. With ``hasher`` (a ``hashlib``
    object), the file's bytes are hashed as they are read; once every batch has been taken it
    has hashed the whole file, what lies after the events included.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    records = trace_records.codec()
    stream = _EventStream(path, problems, label, records.decode_span, records.errors, hasher=hasher, follow=True)

    def take(values: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
        return values if stream.step_typed else _as_records(values, stream.file, problems, records)

    yield from _batches(stream, batch_size, take)


def _batches(
    stream: _EventStream, batch_size: int, take: Callable[[list[tuple[int, Any]]], list[tuple[int, Any]]]
) -> Iterator[list[tuple[int, Any]]]:
    """Batches of exactly ``batch_size`` (the last one shorter) of what ``take`` keeps of each step."""
    try:
        stream.read_head()
        pending: list[tuple[int, Any]] = []
        while not stream.ended:
            pending.extend(take(stream.step()))
            while len(pending) >= batch_size:
                yield pending[:batch_size]
                pending = pending[batch_size:]
        if pending:
            yield pending
        stream.check_trailer()
        stream.source.hash_rest()
    finally:
        stream.close()


def _as_records(
    values: list[tuple[int, Any]], file: str, problems: ProblemLog, records: trace_records.RecordCodec
) -> list[tuple[int, TraceRecord]]:
    """Records of the JSON values a step read event by event (a damaged span, or no msgspec)."""
    return [(index, records.from_dict(event)) for index, event in _objects_only(values, file, problems)]


def iter_selected_events(
    path: Path,
    problems: ProblemLog,
    select: re.Pattern[bytes],
    batch_size: int = DEFAULT_BATCH_SIZE,
    *,
    label: str | None = None,
    hasher: Any = None,
) -> Iterator[list[IndexedEvent]]:
    """Batches of ``(byte offset, event)`` for the events whose text ``select`` matches.

    For reading a few kinds of events out of a large trace: the text of other events is
    skipped without being parsed. ``select`` must match inside every wanted event (for
    example ``rb'"cat": "kernel"'``); callers check the parsed events, since a match may
    also occur in an event they do not want. Problems are recorded as in ``iter_trace_events``;
    ``hasher`` hashes the file as in ``iter_trace_records``.
    """
    stream = _EventStream(path, problems, label, hasher=hasher)
    try:
        stream.read_head()
        pending: list[IndexedEvent] = []
        while not stream.ended:
            selected = stream.step_selected(select)
            pending.extend(_objects_only(selected, stream.file, problems))
            if len(pending) >= batch_size:
                yield pending
                pending = []
        if pending:
            yield pending
        stream.source.hash_rest()
    finally:
        stream.close()


def _objects_only(values: list[tuple[int, Any]], file: str, problems: ProblemLog) -> list[IndexedEvent]:
    if all(type(value) is dict for _, value in values):
        return values
    kept = []
    for index, value in values:
        if isinstance(value, dict):
            kept.append((index, value))
        else:
            kind_name = type(value).__name__
            problems.add(file, f"event {index}", NOT_AN_OBJECT, f"event is a JSON {kind_name}, not an object; skipped")
    return kept


def open_source(path: Path, problems: ProblemLog, hasher: Any = None) -> TraceSource:
    """A reader of ``path``'s bytes, gunzipped when compressed (``read()`` returns b"" at the end);
    ``hasher`` is fed the bytes as stored (see ``TraceSource``)."""
    return TraceSource(path, problems, hasher)


def check_trace(path: Path, label: str | None = None) -> None:
    """Raise ``FormatError`` unless ``path`` starts like a trace: an object with ``traceEvents``, or an
    array, whose first events look like trace events (``execution_details.json`` files are arrays too)."""
    check_ends(read_head_values(path), label or str(path))


@dataclass
class TraceEnds:
    """What the head and the tail of a trace hold, read without the events between them.

    ``first_values``: the values of the event array that start in its first ``FIRST_VALUES_BYTES``;
    ``last_events``: events picked from the tail block by a pattern (see ``read_ends``);
    ``metadata``: the top-level keys other than ``traceEvents`` (as ``read_trace_metadata``);
    ``problem``: why no event array was found (empty when one was).
    """

    found_array: bool
    metadata: dict[str, Any]
    first_values: list[Any]
    last_events: list[Event] = field(default_factory=list)
    problem: str = ""


def read_head_values(path: Path) -> TraceEnds:
    """The head of a trace: its keys before the event array and its first values (no tail read)."""
    problems = ProblemLog()
    stream = _EventStream(path, problems, block_bytes=HEAD_BLOCK_BYTES)
    try:
        stream.read_head()
        first = stream.first_values() if stream.found_array else []
    finally:
        stream.close()
    problem = "" if stream.found_array or not problems.records else problems.records[0].message
    problem = problem or ("" if stream.found_array else "no traceEvents array")
    return TraceEnds(stream.found_array, dict(stream.metadata), first, problem=problem)


def read_ends(path: Path, select: re.Pattern[bytes]) -> TraceEnds:
    """The head and the tail of a trace in one bounded read of each: ``read_head_values``, the keys
    after the event array, and the whole events in the last ``TAIL_BYTES`` where ``select`` matches.

    For the facts a reader wants before it reads the events: the tail's events are picked out
    by pattern, without parsing the rest, and may miss one (cut by the block's start, or a match
    inside a string) or take a value that is not an event; callers check what they found
    against their full pass.
    """
    ends = read_head_values(path)
    if not ends.found_array:
        return ends
    tail, whole = _read_tail(path, TAIL_BYTES)
    found = json_spans.metadata_after_array(to_text(tail))
    if found is None and not whole:
        found = _tail_metadata(path)
    ends.metadata.update(found or {})
    ends.last_events = list(picked_events(tail, select.finditer(tail)))
    return ends


def picked_events(data: Any, matches: Iterable[re.Match[bytes]], errors: str = "surrogateescape") -> Iterator[Event]:
    """The events around each of ``matches`` (in ``data`` order) that start after an event boundary,
    each once; an event longer than ``MAX_PICKED_EVENT_BYTES`` is left out. ``errors`` says how
    bytes that are not UTF-8 are decoded (``str.decode``)."""
    starts: set[int] = set()
    for match in matches:
        start = json_spans.event_start(data, max(0, match.start() - MAX_PICKED_EVENT_BYTES), match.start())
        if start is None or start in starts or data[start : start + 1] != b"{":
            continue
        starts.add(start)
        try:
            value, _ = DECODER.raw_decode(data[start : start + MAX_PICKED_EVENT_BYTES].decode("utf-8", errors))
        except (json.JSONDecodeError, RecursionError):  # cut by the block, damaged, or nested too deep
            continue
        if isinstance(value, dict):
            yield value


def check_ends(ends: TraceEnds, label: str) -> None:
    """Raise ``FormatError`` unless the head read as ``ends`` is a trace's (see ``check_trace``)."""
    if not ends.found_array:
        raise FormatError(f"{label}: not a torch.profiler trace: {ends.problem}")
    first = ends.first_values
    if first and not any(_looks_like_event(value) for value in first):
        raise FormatError(f"{label}: not a torch.profiler trace: its array holds no trace events")


def _looks_like_event(value: Any) -> bool:
    """A Chrome-trace event: an object with a phase (``ph``) and a name or a time."""
    return isinstance(value, dict) and isinstance(value.get("ph"), str) and ("name" in value or "ts" in value)


def read_trace_metadata(path: Path) -> dict[str, Any]:
    """The top-level keys of a trace other than ``traceEvents``, read without parsing the events.

    Keys before the event array come from the head of the file, keys after it from its tail
    (Kineto writes ``traceName`` and, in recent versions, more keys after the events).
    Problems in the file are ignored here; ``iter_trace_events`` reports them.
    """
    stream = _EventStream(path, ProblemLog(), block_bytes=HEAD_BLOCK_BYTES)
    try:
        stream.read_head()
        metadata = dict(stream.metadata)
        if stream.found_array:
            metadata.update(_tail_metadata(path))
    finally:
        stream.close()
    return metadata


def _tail_metadata(path: Path) -> dict[str, Any]:
    """Keys after the event array, found in the last bytes of the file (the whole file at worst)."""
    window = TAIL_BYTES
    while True:
        tail, whole = _read_tail(path, window)
        found = json_spans.metadata_after_array(to_text(tail))
        if found is not None or whole:
            return found or {}
        window *= 8


def _read_tail(path: Path, size: int) -> tuple[bytes, bool]:
    """(last ``size`` bytes of the decompressed file, whether that is the whole file)."""
    if not is_gzip(path):
        with open(path, "rb") as handle:
            total = handle.seek(0, 2)
            handle.seek(max(0, total - size))
            return handle.read(), total <= size
    tail = b""
    with contextlib.closing(TraceSource(path, ProblemLog())) as source:
        while chunk := source.read():
            tail = (tail + chunk)[-size:]
        return tail, source.bytes_read <= size

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
import gc
import importlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

from kinetoscope._errors import FormatError
from kinetoscope.format.kineto import json_spans, trace_records
from kinetoscope.format.kineto.trace_records import TraceRecord
from kinetoscope.format.kineto.trace_source import TraceSource, is_gzip
from kinetoscope.format.problems import (
    DUPLICATE_KEY,
    ENCODING,
    MALFORMED,
    NO_EVENTS,
    NOT_AN_OBJECT,
    TRUNCATED,
    ProblemLog,
)

Event = dict[str, Any]
IndexedEvent = tuple[int, Event]

DEFAULT_BATCH_SIZE = 50_000
CHUNK_BYTES = 2 << 20
SHORTER_SPAN_TRIES = 3  # earlier event boundaries tried when a span does not parse
FIRST_VALUES_BYTES = 64 << 10  # the head of the event array read for a first look at its events
HEAD_BLOCK_BYTES = 128 << 10  # read at a time by the looks at a trace's head (more when its header is longer)
# An incomplete value longer than this is taken as damage, not as an event still being read.
MAX_EVENT_BYTES = 64 << 20
TAIL_BYTES = 1 << 20  # the end of a trace read for the keys after its events
TRAILER_BYTES = 1 << 20  # the keys after the events parsed by a pass over every event (past this: looked at)
MAX_PICKED_EVENT_BYTES = 64 << 10  # an event picked out of the tail longer than this is left out
_RESYNC_RE = re.compile(r",\s*\{")
# Where the event array starts, for a header too damaged to parse: its key, else the first object
# that opens like a trace event.
_ARRAY_KEY_RE = re.compile(r'"traceEvents"\s*:\s*\[')
_FIRST_EVENT_RE = re.compile(r'\{(?=\s*"ph"\s*:)')  # Kineto writes "ph" first in every event
_OTHER_LIST_KEYS = frozenset({"deviceProperties"})
_ARRAY_GUESS_RE = re.compile(r'\[\s*(?=\{\s*"(?:ph|name|cat|pid|tid|ts|args)"\s*:)')
_DECODER = json.JSONDecoder()


def fast_loads() -> tuple[str, Callable[[bytes], Any]]:
    """(name, loads) of the fastest JSON decoder installed: orjson when present, else the stdlib's."""
    try:
        # Optional: the capture path must work with the standard library alone.
        orjson = importlib.import_module("orjson")
    except ImportError:
        return "json", json.loads
    return "orjson", orjson.loads


class _IncompleteError(Exception):
    """The text ends before the value being read; more input is needed."""


def _to_text(data: bytes) -> str:
    # surrogateescape maps invalid UTF-8 bytes to lone surrogates, so offsets map back to bytes exactly.
    return data.decode("utf-8", "surrogateescape")


def _byte_length(text: str) -> int:
    return len(text.encode("utf-8", "surrogateescape"))


@contextlib.contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many containers at once.

    Decoded events cannot form cycles, yet each batch of new dicts would trigger full
    collections whose cost grows with the heap; pausing for one decode call is safe.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _is_valid_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _replace_surrogates(value: Any) -> Any:
    """``value`` with the escaped bytes of invalid UTF-8 in its strings replaced by U+FFFD."""
    if isinstance(value, str):
        try:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:  # a lone surrogate from a JSON escape ("\ud800"), not an escaped byte
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_surrogates(item) for item in value]
    return value


def _ends_early(exc: json.JSONDecodeError, text: str) -> bool:
    """Whether a decode error is only the end of the text arriving before the end of the value."""
    return exc.pos >= len(text) or exc.msg.startswith("Unterminated string")


def _decode_value(text: str, pos: int, final: bool) -> tuple[Any, int]:
    try:
        value, end = _DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        if not final and _ends_early(exc, text):
            raise _IncompleteError from exc
        raise
    except RecursionError:  # nested deeper than Python recurses: damaged like any undecodable value
        raise json.JSONDecodeError("value nested too deeply", text, pos) from None
    if not final and end >= len(text):
        raise _IncompleteError  # a number at the very end may continue in the next chunk
    return value, end


@dataclass
class _Head:
    """The keys before ``traceEvents`` and where the event array starts (None: no array found)."""

    metadata: dict[str, Any]
    array_start_char: int | None
    array_key: str = "traceEvents"  # the key the array was found under (damaged, if not this)
    closed_at_char: int = 0  # where the top-level object closed, when no array was found
    bare: bool = False  # the file is a bare array of events


def _trailer_keys(rest: str, bare_array: bool) -> list[str] | None:
    """The keys after the event array's ']' (``rest``, stripped), or None when they do not close
    the file as its top level requires (cut or damaged)."""
    if bare_array:
        return None if rest else []
    if rest == "}":
        return []
    if not rest.startswith(","):
        return None
    try:
        pairs = json.loads("{" + rest[1:], object_pairs_hook=list)
    except (ValueError, RecursionError):
        return None
    return [str(key) for key, _ in pairs]


def _parse_head(text: str, final: bool, metadata: dict[str, Any] | None = None) -> _Head:
    """Parse the top-level object up to the ``traceEvents`` array; raises _IncompleteError or
    JSONDecodeError. The keys read before an error are left in ``metadata`` when one is given."""
    pos = json_spans.skip_space(text, 0)
    if pos >= len(text):
        raise _IncompleteError if not final else json.JSONDecodeError("empty file", text, pos)
    if text[pos] == "[":
        return _Head({}, pos + 1, bare=True)
    if text[pos] != "{":
        raise json.JSONDecodeError("expected '{' or '[' at the start of a trace", text, pos)
    return _parse_head_keys(text, pos + 1, final, {} if metadata is None else metadata)


def _parse_head_keys(text: str, pos: int, final: bool, metadata: dict[str, Any]) -> _Head:
    while True:
        pos = json_spans.skip_space(text, pos)
        if pos >= len(text):
            raise _IncompleteError if not final else json.JSONDecodeError("file ends in the header", text, pos)
        if text[pos] in ",":
            pos += 1
            continue
        if text[pos] == "}":
            return _Head(metadata, None, closed_at_char=pos)
        key, pos = _decode_value(text, pos, final)
        pos = _expect(text, json_spans.skip_space(text, pos), ":", final)
        pos = json_spans.skip_space(text, pos)
        if pos < len(text) and text[pos] == "[" and (key == "traceEvents" or _damaged_array_key(key, text, pos)):
            return _Head(metadata, pos + 1, str(key))
        metadata[str(key)], pos = _decode_value(text, pos, final)


def _find_array(text: str, start: int) -> int | None:
    """Where the event array's first value starts in a damaged header, searching from ``start``."""
    for pattern in (_ARRAY_KEY_RE, _ARRAY_GUESS_RE):
        found = pattern.search(text, start)
        if found is not None:
            return found.end()
    first = _FIRST_EVENT_RE.search(text, start)
    return None if first is None else first.start()


def _damaged_array_key(key: Any, text: str, pos: int) -> bool:
    """Whether the array at ``pos`` is the event array under a damaged key: its first value opens
    like a trace event, and the key is not one whose value is a list of other objects."""
    return key not in _OTHER_LIST_KEYS and _ARRAY_GUESS_RE.match(text, pos) is not None


def _expect(text: str, pos: int, char: str, final: bool) -> int:
    if pos >= len(text) and not final:
        raise _IncompleteError
    if pos >= len(text) or text[pos] != char:
        raise json.JSONDecodeError(f"expected {char!r}", text, pos)
    return pos + 1


@dataclass
class _ScanResult:
    events: list[tuple[int, Any]] = field(default_factory=list)
    consumed_chars: int = 0
    ended: bool = False  # reached the ']' closing the event array


class _EventStream:
    """The state of one pass over a trace's event array."""

    def __init__(
        self,
        path: Path,
        problems: ProblemLog,
        label: str | None = None,
        decode_span: Callable[[bytes], list[Any]] | None = None,
        span_errors: tuple[type[Exception], ...] = (ValueError, TypeError),
        *,
        hasher: Any = None,
        block_bytes: int | None = None,
        follow: bool = False,
    ) -> None:
        self.path = path
        self.file = label or str(path)
        self.problems = problems
        self.source = TraceSource(path, problems, hasher, follow=follow)
        self.block_bytes = block_bytes  # read at a time while the header is parsed (None: CHUNK_BYTES)
        self.loads_name, self.loads = fast_loads()
        self.decode_span = decode_span or self.loads
        self.step_typed = False  # whether the last step's values came from ``decode_span`` (not dicts)
        self.span_errors = span_errors
        self.buf = b""
        self.pos = 0  # offset in buf of the next value (or separator) of the event array
        self.base = 0  # file offset of buf[0]
        self.index = 0  # index of the next event in the array
        self.ended = False
        self.metadata: dict[str, Any] = {}
        self.found_array = False
        self.cut_inside_event = False
        self.closed = False  # the event array ended at its ']'
        self.bare_array = False  # the file is an array of events, not an object holding one

    # -- header -------------------------------------------------------------------------------
    def read_head(self) -> None:
        """Parse the keys before the event array. Linear in the header's length: blanks before it
        are dropped as they are read, and each retry reads as much again as is buffered, so the
        header is parsed a bounded number of times; one longer than ``MAX_EVENT_BYTES`` is damage."""
        while True:
            self._drop_leading_blanks()
            text = _to_text(self.buf)
            read_keys: dict[str, Any] = {}
            try:
                if len(self.buf) > MAX_EVENT_BYTES:
                    too_long = f"the header is longer than {MAX_EVENT_BYTES >> 20} MiB"
                    raise json.JSONDecodeError(too_long, text, len(text))
                head = _parse_head(text, self.source.eof, read_keys)
            except _IncompleteError:
                self._fill(force=True, size=self._more_bytes())
                continue
            except json.JSONDecodeError as exc:
                self._recover_head(exc, read_keys)
                return
            self._take_head(head, text)
            return

    def _more_bytes(self) -> int:
        """How much to read next while the header is incomplete: as much again as is buffered."""
        return max(self.block_bytes or CHUNK_BYTES, len(self.buf))

    def _drop_leading_blanks(self) -> None:
        kept = self.buf.lstrip(b" \t\r\n")
        if len(kept) < len(self.buf):
            self.base += len(self.buf) - len(kept)
            self.buf = kept

    def _recover_head(self, exc: json.JSONDecodeError, read_keys: dict[str, Any]) -> None:
        """A damaged header costs the header keys after the damage, not the events: the event array
        is found by its key (or, if that is damaged too, by its first event) and read from there."""
        text = _to_text(self.buf)
        found = _find_array(text, 0)
        while found is None and len(self.buf) < MAX_EVENT_BYTES and self._fill(force=True, size=self._more_bytes()):
            text = _to_text(self.buf)
            found = _find_array(text, 0)
        if found is None:
            self._head_problem(exc, text)
            return
        where = f"byte {self.base + _byte_length(text[: exc.pos])}"
        message = (f"cannot read the trace header: {exc.msg}; the header keys after it are lost "
                   f"({len(read_keys)} read before it), the events are read from the array at "
                   f"byte {self.base + _byte_length(text[:found])}")
        self.problems.add(self.file, where, MALFORMED, message)
        self.metadata = read_keys
        self.found_array = True
        self.pos = _byte_length(text[:found])

    def _take_head(self, head: _Head, text: str) -> None:
        self.metadata = head.metadata
        self.bare_array = head.bare
        if head.array_start_char is None:
            found = _find_array(text, head.closed_at_char)
            if found is None:
                self.problems.add(self.file, "top level", NO_EVENTS, "no traceEvents array in this file")
                self.ended = True
                return
            where = f"byte {self.base + _byte_length(text[: head.closed_at_char])}"
            message = "the header object closes here, before its traceEvents array (damaged?); the array is read"
            self.problems.add(self.file, where, MALFORMED, message)
            head = _Head(head.metadata, found)
        self.found_array = True
        self.pos = _byte_length(text[: head.array_start_char])
        if head.array_key != "traceEvents":
            where = f"byte {self.base + self.pos}"
            message = f"the event array's key reads {head.array_key!r} (damaged?); read as traceEvents"
            self.problems.add(self.file, where, MALFORMED, message)

    def _head_problem(self, exc: json.JSONDecodeError, text: str) -> None:
        where = f"byte {self.base + _byte_length(text[: exc.pos])}"
        kind = TRUNCATED if exc.pos >= len(text) else MALFORMED
        self.problems.add(self.file, where, kind, f"cannot read the trace header: {exc.msg}")
        self.ended = True

    # -- buffer -------------------------------------------------------------------------------
    def _fill(self, force: bool = False, size: int | None = None) -> bool:
        """Read the next chunk when little is buffered (or when ``force``); False at end of file."""
        if self.source.eof:
            return False
        if not force and len(self.buf) - self.pos >= CHUNK_BYTES:
            return True
        chunk = self.source.read(size or CHUNK_BYTES)
        self.base += self.pos
        self.buf = b"".join((memoryview(self.buf)[self.pos :], chunk))
        self.pos = 0
        return bool(chunk)

    def _last_boundary(self) -> tuple[int, int] | None:
        """(end of an event, just after its comma) for the last event boundary in the buffer."""
        return json_spans.last_event_boundary(self.buf, self.pos, len(self.buf))

    # -- events -------------------------------------------------------------------------------
    def first_values(self) -> list[Any]:
        """The values of the event array that start in its first ``FIRST_VALUES_BYTES`` (nothing is consumed)."""
        while len(self.buf) - self.pos < FIRST_VALUES_BYTES and self._fill(force=True, size=self.block_bytes):
            pass
        text = _to_text(self.buf[self.pos : self.pos + FIRST_VALUES_BYTES]).lstrip()
        text = text[1:] if text.startswith("[") else text
        decoder, at = json.JSONDecoder(), 0
        found: list[Any] = []
        while True:
            at = json_spans.skip_space(text, at)
            if at >= len(text) or text[at] == "]":
                return found
            try:
                value, at = decoder.raw_decode(text, at)
            except (json.JSONDecodeError, RecursionError):  # cut by the block's end, or damaged: readers say which
                return found
            found.append(value)
            at = json_spans.skip_space(text, at)
            if at < len(text) and text[at] == ",":
                at += 1

    def step(self) -> list[tuple[int, Any]]:
        """Read some more events; sets ``ended`` when the array (or the file) is done."""
        self._fill()
        cut = self._last_boundary()
        if cut is not None:
            fast = self._parse_span(cut) or self._parse_shorter_span(cut)
            if fast is not None:
                return fast
            return self._scan(final=self.source.eof, stop_byte=cut[0])
        if self.source.eof or len(self.buf) - self.pos > MAX_EVENT_BYTES:
            return self._scan(final=self.source.eof, stop_byte=len(self.buf))
        self._fill(force=True)
        return []

    def step_selected(self, select: re.Pattern[bytes]) -> list[tuple[int, Any]]:
        """Like ``step``, but parses only the events in which ``select`` matches.

        Positions are byte offsets. A span whose matched events cannot be cut out cleanly is
        parsed whole instead, so the result is the same, only slower.
        """
        self._fill()
        cut = self._last_boundary()
        if cut is None:
            start = self.base + self.pos
            return [(start, value) for _, value in self.step()]
        found = json_spans.select_in_span(self.buf, self.pos, cut[0], select, self.loads)
        if found is None:
            start = self.base + self.pos
            whole = self._parse_span(cut) or self._scan(final=self.source.eof, stop_byte=cut[0])
            return [(start, value) for _, value in whole]
        self.pos = cut[1]
        return [(self.base + offset, value) for offset, value in found]

    def _parse_shorter_span(self, cut: tuple[int, int]) -> list[tuple[int, Any]] | None:
        """A span cut inside an event (whose args hold an array of objects, ``[{...}, {...}]``)
        does not parse: the spans that end at the event boundaries before that cut are tried
        before the span is walked event by event (many times slower)."""
        for _ in range(SHORTER_SPAN_TRIES):
            earlier = json_spans.last_event_boundary(self.buf, self.pos, cut[0] - 1)
            if earlier is None:
                return None
            fast = self._parse_span(earlier)
            if fast is not None:
                return fast
            cut = earlier
        return None

    def _parse_span(self, cut: tuple[int, int]) -> list[tuple[int, Any]] | None:
        with paused_gc():
            try:
                # one copy of the span (a slice then a concatenation would copy it twice)
                values = self.decode_span(b"".join((b"[", memoryview(self.buf)[self.pos : cut[0]], b"]")))
            except self.span_errors:
                return None
            self.step_typed = self.decode_span is not self.loads
            first = self.index
            self.index += len(values)
            self.pos = cut[1]
            return list(zip(count(first), values))

    def _scan(self, final: bool, stop_byte: int) -> list[tuple[int, Any]]:
        self.step_typed = False
        head_text = _to_text(self.buf[self.pos : stop_byte])
        text = head_text + _to_text(self.buf[stop_byte:])
        with paused_gc():
            result = self._scan_text(text, len(head_text), final)
        if not _is_valid_utf8(text):
            result.events = self._replace_bad_bytes(result.events)
        self.pos += _byte_length(text[: result.consumed_chars])
        if result.ended:
            self.ended = self.closed = True
        elif final:
            self._truncated_end()
        elif result.consumed_chars == 0:
            self._fill(force=True)
        return result.events

    def _replace_bad_bytes(self, events: list[tuple[int, Any]]) -> list[tuple[int, Any]]:
        cleaned = []
        for index, value in events:
            fixed = _replace_surrogates(value)
            if fixed != value:
                message = "invalid UTF-8 bytes in this event were replaced by U+FFFD"
                self.problems.add(self.file, f"event {index}", ENCODING, message)
            cleaned.append((index, fixed))
        return cleaned

    def _truncated_end(self) -> None:
        self.ended = True
        if self.cut_inside_event:
            return
        where = f"event {self.index}"
        message = f"the file ends before the traceEvents array is closed ({self.index} events read)"
        self.problems.add(self.file, where, TRUNCATED, message)

    def _scan_text(self, text: str, stop: int, final: bool) -> _ScanResult:
        result = _ScanResult()
        pos = 0
        while pos < stop or (final and pos < len(text)):
            pos = json_spans.skip_space(text, pos)
            if pos >= len(text):
                break
            if text[pos] == ",":
                pos += 1
                continue
            if text[pos] == "]":
                result.ended, pos = True, pos + 1
                break
            try:
                value, pos = _decode_value(text, pos, final)
            except _IncompleteError:
                break
            except json.JSONDecodeError as exc:
                pos = self._bad_event(exc, text, pos, final)
                continue
            result.events.append((self.index, value))
            self.index += 1
        result.consumed_chars = min(pos, len(text))
        return result

    def _bad_event(self, exc: json.JSONDecodeError, text: str, start: int, final: bool) -> int:
        """Record the event at ``start`` as unreadable; return where reading resumes."""
        byte = self.base + self.pos + _byte_length(text[: exc.pos])
        if final and _ends_early(exc, text):
            kind, message = TRUNCATED, f"the file ends inside this event ({exc.msg})"
            self.cut_inside_event = True
        else:
            kind, message = MALFORMED, f"not valid JSON at byte {byte}: {exc.msg}; event skipped"
        self.problems.add(self.file, f"event {self.index}", kind, message)
        self.index += 1
        resync = _RESYNC_RE.search(text, max(start + 1, exc.pos))
        return resync.end() - 1 if resync else len(text)

    def check_trailer(self) -> None:
        """After the array's ']': the keys after it must close the top-level object (a bare array:
        nothing but blanks). A file cut there (an older Kineto writes ``baseTimeNanoseconds`` last)
        keeps every event yet loses those keys: a ``TRUNCATED`` problem, not a silent 1970. A second
        ``traceEvents`` key is a ``DUPLICATE_KEY`` problem: its events are not read, where json and
        orjson would read them instead of the first's."""
        if not self.closed:
            return
        while len(self.buf) - self.pos <= TRAILER_BYTES and self._fill(force=True):
            pass
        rest = _to_text(self.buf[self.pos : self.pos + TRAILER_BYTES + 1])
        where = f"byte {self.base + self.pos}"
        if len(rest) > TRAILER_BYTES:  # long keys after the events: only a second array is looked for
            if _ARRAY_KEY_RE.search(rest):
                self._duplicate_array(where)
            return
        keys = _trailer_keys(rest.strip(), self.bare_array)
        if keys is None:
            message = (
                "the file ends before the top-level object is closed, after the traceEvents array: "
                "the keys after the events (such as baseTimeNanoseconds) are cut or damaged"
            )
            self.problems.add(self.file, where, TRUNCATED, message)
        elif "traceEvents" in keys:
            self._duplicate_array(where)

    def _duplicate_array(self, where: str) -> None:
        message = (
            "a second traceEvents key follows the first array: the first array is read and the second "
            "left out (json and orjson would read the second: tools disagree on this file)"
        )
        self.problems.add(self.file, where, DUPLICATE_KEY, message)

    def close(self) -> None:
        self.source.close()


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
    decode_span: Callable[[bytes], list[Any]] | None = None,
) -> Iterator[list[tuple[int, TraceRecord]]]:
    """Like ``iter_trace_events``, with each event as a ``TraceRecord`` (see ``trace_records``).

    The faster reader for passes that touch every event: with msgspec installed, spans are
    decoded straight into records. Damaged spans are read event by event exactly as in
    ``iter_trace_events``, with the same problems recorded. With ``hasher`` (a ``hashlib``
    object), the file's bytes are hashed as they are read; once every batch has been taken it
    has hashed the whole file, what lies after the events included.

    With ``decode_span``, the events of a span it takes are what it gives (their JSON texts, for
    readers that decode them elsewhere, such as worker processes); events read one by one (a span
    it refuses) are still records. It must refuse (raising one of the record codec's ``errors``)
    at least every span the record decoder refuses but for values beyond its number range, which
    callers must catch when they decode the texts; the spans, batches, event indexes and problems
    are then exactly those of the record decoder.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    records = trace_records.codec()
    decode = decode_span or records.decode_span
    stream = _EventStream(path, problems, label, decode, records.errors, hasher=hasher, follow=True)

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
    found = json_spans.metadata_after_array(_to_text(tail))
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
            value, _ = _DECODER.raw_decode(data[start : start + MAX_PICKED_EVENT_BYTES].decode("utf-8", errors))
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
        found = json_spans.metadata_after_array(_to_text(tail))
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

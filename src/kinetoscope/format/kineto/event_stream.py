"""One pass over a Kineto JSON trace's event array: read in chunks, cut at event boundaries, each span
decoded in one call where it parses and walked event by event where it does not (see ``kineto_json``).
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path
from typing import Any

from kinetoscope.format.kineto import json_spans
from kinetoscope.format.kineto.json_head import (
    ARRAY_KEY_RE,
    Head,
    IncompleteError,
    byte_length,
    decode_value,
    ends_early,
    find_array,
    is_valid_utf8,
    parse_head,
    paused_gc,
    replace_surrogates,
    to_text,
    trailer_keys,
)
from kinetoscope.format.kineto.trace_source import TraceSource
from kinetoscope.format.problems import (
    DUPLICATE_KEY,
    ENCODING,
    MALFORMED,
    NO_EVENTS,
    TRUNCATED,
    ProblemLog,
)

CHUNK_BYTES = 512 << 10  # a span's decoded records live beside the batch being ingested: a few MiB of objects
SHORTER_SPAN_TRIES = 3  # earlier event boundaries tried when a span does not parse
FIRST_VALUES_BYTES = 64 << 10  # the head of the event array read for a first look at its events
# An incomplete value longer than this is taken as damage, not as an event still being read.
MAX_EVENT_BYTES = 64 << 20
TRAILER_BYTES = 1 << 20  # the keys after the events parsed by a pass over every event (past this: looked at)
_RESYNC_RE = re.compile(r",\s*\{")


def fast_loads() -> tuple[str, Callable[[bytes], Any]]:
    """(name, loads) of the fastest JSON decoder installed: orjson when present, else the stdlib's."""
    try:
        # Optional: the capture path must work with the standard library alone.
        orjson = importlib.import_module("orjson")
    except ImportError:
        return "json", json.loads
    return "orjson", orjson.loads



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
            text = to_text(self.buf)
            read_keys: dict[str, Any] = {}
            try:
                if len(self.buf) > MAX_EVENT_BYTES:
                    too_long = f"the header is longer than {MAX_EVENT_BYTES >> 20} MiB"
                    raise json.JSONDecodeError(too_long, text, len(text))
                head = parse_head(text, self.source.eof, read_keys)
            except IncompleteError:
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
        text = to_text(self.buf)
        found = find_array(text, 0)
        while found is None and len(self.buf) < MAX_EVENT_BYTES and self._fill(force=True, size=self._more_bytes()):
            text = to_text(self.buf)
            found = find_array(text, 0)
        if found is None:
            self._head_problem(exc, text)
            return
        where = f"byte {self.base + byte_length(text[: exc.pos])}"
        message = (f"cannot read the trace header: {exc.msg}; the header keys after it are lost "
                   f"({len(read_keys)} read before it), the events are read from the array at "
                   f"byte {self.base + byte_length(text[:found])}")
        self.problems.add(self.file, where, MALFORMED, message)
        self.metadata = read_keys
        self.found_array = True
        self.pos = byte_length(text[:found])

    def _take_head(self, head: Head, text: str) -> None:
        self.metadata = head.metadata
        self.bare_array = head.bare
        if head.array_start_char is None:
            found = find_array(text, head.closed_at_char)
            if found is None:
                self.problems.add(self.file, "top level", NO_EVENTS, "no traceEvents array in this file")
                self.ended = True
                return
            where = f"byte {self.base + byte_length(text[: head.closed_at_char])}"
            message = "the header object closes here, before its traceEvents array (damaged?); the array is read"
            self.problems.add(self.file, where, MALFORMED, message)
            head = Head(head.metadata, found)
        self.found_array = True
        self.pos = byte_length(text[: head.array_start_char])
        if head.array_key != "traceEvents":
            where = f"byte {self.base + self.pos}"
            message = f"the event array's key reads {head.array_key!r} (damaged?); read as traceEvents"
            self.problems.add(self.file, where, MALFORMED, message)

    def _head_problem(self, exc: json.JSONDecodeError, text: str) -> None:
        where = f"byte {self.base + byte_length(text[: exc.pos])}"
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
        text = to_text(self.buf[self.pos : self.pos + FIRST_VALUES_BYTES]).lstrip()
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
        head_text = to_text(self.buf[self.pos : stop_byte])
        text = head_text + to_text(self.buf[stop_byte:])
        with paused_gc():
            result = self._scan_text(text, len(head_text), final)
        if not is_valid_utf8(text):
            result.events = self._replace_bad_bytes(result.events)
        self.pos += byte_length(text[: result.consumed_chars])
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
            fixed = replace_surrogates(value)
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
                value, pos = decode_value(text, pos, final)
            except IncompleteError:
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
        byte = self.base + self.pos + byte_length(text[: exc.pos])
        if final and ends_early(exc, text):
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
        rest = to_text(self.buf[self.pos : self.pos + TRAILER_BYTES + 1])
        where = f"byte {self.base + self.pos}"
        if len(rest) > TRAILER_BYTES:  # long keys after the events: only a second array is looked for
            if ARRAY_KEY_RE.search(rest):
                self._duplicate_array(where)
            return
        keys = trailer_keys(rest.strip(), self.bare_array)
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

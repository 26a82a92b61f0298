"""Finding values in raw JSON bytes without parsing all of them: event boundaries and the trace tail.

An element of a trace's event array ends with ``}`` and is followed by ``,`` and the next
``{``. Cutting at such a place is only trusted when the text between cuts then parses (see
``kineto_json``), since the same bytes may occur inside a string.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

WHITESPACE = b" \t\r\n"
_BOUNDARY_TRIES = 64
_BOUNDARY_RE = re.compile(rb"\}[ \t\r\n]*,[ \t\r\n]*\{")
_OPEN_RE = re.compile(rb"[ \t\r\n]*\{")
_SPACE_RE = re.compile(r"\s*")
_END_RE = re.compile(r"\s*\Z")
_JSON_SPACE_RE = re.compile(r"[ \t\r\n]*")
_DECODER = json.JSONDecoder()


def last_boundary(buf: bytes, lo: int) -> tuple[int, int] | None:
    """(end of a value, start of the next) for the last ``}`` in ``buf[lo:]`` followed by a comma."""
    end = len(buf)
    for _ in range(_BOUNDARY_TRIES):
        close = buf.rfind(b"}", lo, end)
        if close < 0:
            return None
        after = close + 1
        while after < len(buf) and buf[after] in WHITESPACE:
            after += 1
        if after < len(buf) and buf[after] == 0x2C:
            return close + 1, after + 1
        end = close
    return None


def last_event_boundary(buf: bytes, lo: int, hi: int) -> tuple[int, int] | None:
    """(end of a value, just after the comma) for the last ``}`` in ``buf[lo:hi]`` followed by a
    comma and then by the ``{`` of the next object: where one event of an array ends and the next
    begins. A ``},`` inside an event's args (``{"a": {"x": 1}, "b": 2}``) is not followed by ``{``
    and is passed over; one that is (an array of objects in args) is caught when the span does
    not parse."""
    end = hi
    for _ in range(_BOUNDARY_TRIES):
        close = buf.rfind(b"}", lo, end)
        if close < 0:
            return None
        if _BOUNDARY_RE.match(buf, close) is not None:
            return close + 1, buf.index(b",", close) + 1
        end = close
    return None


def select_in_span(
    buf: bytes, lo: int, hi: int, select: re.Pattern[bytes], loads: Callable[[bytes], Any]
) -> list[tuple[int, Any]] | None:
    """(offset, event) of each event in ``buf[lo:hi]`` where ``select`` matches; None if one cannot be cut out."""
    found: list[tuple[int, Any]] = []
    covered = lo
    for match in select.finditer(buf, lo, hi):
        if match.start() < covered:
            continue
        start, end = event_start(buf, lo, match.start()), event_end(buf, match.end(), hi)
        if start is None or end is None:
            return None
        try:
            value = loads(buf[start:end])
        except (ValueError, TypeError):
            return None
        if not isinstance(value, dict):
            return None
        found.append((start, value))
        covered = end
    return found


def event_start(buf: bytes, lo: int, at: int) -> int | None:
    """Start of the array element containing ``at``: the ``{`` after the last ``}`` ``,`` before it, or at ``lo``."""
    while True:
        close = buf.rfind(b"}", lo, at)
        if close < 0:
            match = _OPEN_RE.match(buf, lo)
            return match.end() - 1 if match else None
        boundary = _BOUNDARY_RE.match(buf, close)
        if boundary is not None and boundary.end() - 1 <= at:
            return boundary.end() - 1
        at = close


def event_end(buf: bytes, at: int, hi: int) -> int | None:
    """End of the array element containing ``at``: the first ``}`` followed by ``,`` ``{``, or ``hi``."""
    boundary = _BOUNDARY_RE.search(buf, at, hi)
    if boundary is not None:
        return boundary.start() + 1
    return hi if buf.rfind(b"}", at, hi) == hi - 1 else None


def metadata_after_array(text: str) -> dict[str, Any] | None:
    """The object members after the ``]`` closing the event array, or None if not in ``text``.

    Candidates are tried from the front: the first ``]`` after an event (``}``) or an empty
    array (``[``) whose remaining text parses as the rest of the top-level object.
    """
    start = text.find("]")
    while start >= 0:
        found = _members_after(text, start)
        if found is not None:
            return found
        start = text.find("]", start + 1)
    return None


def _members_after(text: str, close: int) -> dict[str, Any] | None:
    last = close - 1
    while last >= 0 and text[last] in " \t\r\n":
        last -= 1
    if last < 0 or text[last] not in "}[":
        return None
    after = _SPACE_RE.match(text, close + 1)
    pos = after.end() if after else close + 1
    if text.startswith("}", pos):
        return {} if _END_RE.match(text, pos + 1) else None
    if not text.startswith(",", pos):
        return None
    members = _members(text, pos + 1)
    # A candidate before the event array would hold the array itself.
    if members is None or "traceEvents" in members:
        return None
    return members


def _members(text: str, pos: int) -> dict[str, Any] | None:
    """The members ``"key": value, ...}`` from ``pos`` when they close the text (only whitespace after).

    Parsed in place, member by member, so a candidate inside an event fails at the end of that
    event instead of costing a copy and a parse of the rest of the text.
    """
    members: dict[str, Any] = {}
    pos = skip_space(text, pos)
    if text.startswith("}", pos) and _END_RE.match(text, pos + 1):
        return members  # a comma before the closing brace, as the standard parser reads "{ }"
    while True:
        try:
            key, pos = _DECODER.raw_decode(text, skip_space(text, pos))
            pos = skip_space(text, pos)
            if not text.startswith(":", pos) or not isinstance(key, str):
                return None
            members[key], pos = _DECODER.raw_decode(text, skip_space(text, pos + 1))
        except (ValueError, RecursionError):
            return None
        pos = skip_space(text, pos)
        if text.startswith(",", pos):
            pos += 1
        elif text.startswith("}", pos) and _END_RE.match(text, pos + 1):
            return members
        else:
            return None


def skip_space(text: str, pos: int) -> int:
    """The position of the first character at or after ``pos`` that is not JSON whitespace."""
    found = _JSON_SPACE_RE.match(text, pos)
    return found.end() if found else pos

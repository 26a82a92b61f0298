"""The head of a Kineto JSON trace: the keys before its event array, where that array starts, and
the text helpers the event stream shares (decoding one value, lone surrogates, byte lengths).
"""

from __future__ import annotations

import contextlib
import gc
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kinetoscope.format.kineto import json_spans

# Where the event array starts, for a header too damaged to parse: its key, else the first object
# that opens like a trace event.
ARRAY_KEY_RE = re.compile(r'"traceEvents"\s*:\s*\[')
_FIRST_EVENT_RE = re.compile(r'\{(?=\s*"ph"\s*:)')  # Kineto writes "ph" first in every event
_OTHER_LIST_KEYS = frozenset({"deviceProperties"})
_ARRAY_GUESS_RE = re.compile(r'\[\s*(?=\{\s*"(?:ph|name|cat|pid|tid|ts|args)"\s*:)')
DECODER = json.JSONDecoder()


class IncompleteError(Exception):
    """The text ends before the value being read; more input is needed."""


def to_text(data: bytes) -> str:
    # surrogateescape maps invalid UTF-8 bytes to lone surrogates, so offsets map back to bytes exactly.
    return data.decode("utf-8", "surrogateescape")


def byte_length(text: str) -> int:
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


def is_valid_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def replace_surrogates(value: Any) -> Any:
    """``value`` with the escaped bytes of invalid UTF-8 in its strings replaced by U+FFFD."""
    if isinstance(value, str):
        try:
            return value.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        except UnicodeEncodeError:  # a lone surrogate from a JSON escape ("\ud800"), not an escaped byte
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, dict):
        return {replace_surrogates(k): replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, list):
        return [replace_surrogates(item) for item in value]
    return value


def ends_early(exc: json.JSONDecodeError, text: str) -> bool:
    """Whether a decode error is only the end of the text arriving before the end of the value."""
    return exc.pos >= len(text) or exc.msg.startswith("Unterminated string")


def decode_value(text: str, pos: int, final: bool) -> tuple[Any, int]:
    try:
        value, end = DECODER.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        if not final and ends_early(exc, text):
            raise IncompleteError from exc
        raise
    except RecursionError:  # nested deeper than Python recurses: damaged like any undecodable value
        raise json.JSONDecodeError("value nested too deeply", text, pos) from None
    if not final and end >= len(text):
        raise IncompleteError  # a number at the very end may continue in the next chunk
    return value, end


@dataclass
class Head:
    """The keys before ``traceEvents`` and where the event array starts (None: no array found)."""

    metadata: dict[str, Any]
    array_start_char: int | None
    array_key: str = "traceEvents"  # the key the array was found under (damaged, if not this)
    closed_at_char: int = 0  # where the top-level object closed, when no array was found
    bare: bool = False  # the file is a bare array of events


def trailer_keys(rest: str, bare_array: bool) -> list[str] | None:
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


def parse_head(text: str, final: bool, metadata: dict[str, Any] | None = None) -> Head:
    """Parse the top-level object up to the ``traceEvents`` array; raises IncompleteError or
    JSONDecodeError. The keys read before an error are left in ``metadata`` when one is given."""
    pos = json_spans.skip_space(text, 0)
    if pos >= len(text):
        raise IncompleteError if not final else json.JSONDecodeError("empty file", text, pos)
    if text[pos] == "[":
        return Head({}, pos + 1, bare=True)
    if text[pos] != "{":
        raise json.JSONDecodeError("expected '{' or '[' at the start of a trace", text, pos)
    return _parse_head_keys(text, pos + 1, final, {} if metadata is None else metadata)


def _parse_head_keys(text: str, pos: int, final: bool, metadata: dict[str, Any]) -> Head:
    while True:
        pos = json_spans.skip_space(text, pos)
        if pos >= len(text):
            raise IncompleteError if not final else json.JSONDecodeError("file ends in the header", text, pos)
        if text[pos] in ",":
            pos += 1
            continue
        if text[pos] == "}":
            return Head(metadata, None, closed_at_char=pos)
        key, pos = decode_value(text, pos, final)
        pos = _expect(text, json_spans.skip_space(text, pos), ":", final)
        pos = json_spans.skip_space(text, pos)
        if pos < len(text) and text[pos] == "[" and (key == "traceEvents" or _damaged_array_key(key, text, pos)):
            return Head(metadata, pos + 1, str(key))
        metadata[str(key)], pos = decode_value(text, pos, final)


def find_array(text: str, start: int) -> int | None:
    """Where the event array's first value starts in a damaged header, searching from ``start``."""
    for pattern in (ARRAY_KEY_RE, _ARRAY_GUESS_RE):
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
        raise IncompleteError
    if pos >= len(text) or text[pos] != char:
        raise json.JSONDecodeError(f"expected {char!r}", text, pos)
    return pos + 1

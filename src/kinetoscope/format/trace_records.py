"""Kineto events as compact records instead of dicts: the shape readers that touch every event use.

A record has the event's top-level fields as attributes (``ph``, ``cat``, ``name``, ``pid``,
``tid``, ``ts``, ``dur``, ``id``, ``bp``, ``s``; None when absent, any JSON value when present)
and its ``args`` as raw JSON text, decoded only by the readers that need it.

With msgspec installed (the explorer's extra), a span of the event array is decoded straight
into records: the decoder skips the keys no reader uses and copies ``args`` without parsing it,
about twice as fast as decoding the same span into dicts. Without it (the capture path does not
require it), records are made from the dicts the standard decoders give; readers see the same
records either way.
"""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

FIELDS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "bp", "s")


class TraceRecord(Protocol):
    """One event of a trace's event array; ``args`` is the raw JSON text of its args (empty if none)."""

    ph: Any
    cat: Any
    name: Any
    pid: Any
    tid: Any
    ts: Any
    dur: Any
    id: Any
    bp: Any
    s: Any
    args: Any


class DictRecord:
    """A record made from an event dict (the path without msgspec, and damaged spans)."""

    __slots__ = (*FIELDS, "args")

    def __init__(self, event: dict[str, Any], dumps: Callable[[Any], bytes]) -> None:
        get = event.get
        self.ph, self.cat, self.name, self.pid, self.tid = get("ph"), get("cat"), get("name"), get("pid"), get("tid")
        self.ts, self.dur, self.id, self.bp, self.s = get("ts"), get("dur"), get("id"), get("bp"), get("s")
        args = get("args")
        self.args: bytes = b"" if args is None else _dump(args, dumps)


def _dump(value: Any, dumps: Callable[[Any], bytes]) -> bytes:
    try:
        return dumps(value)
    except (TypeError, ValueError, OverflowError):  # orjson refuses ints beyond 64 bits
        return json.dumps(value, default=str).encode()


class RecordCodec:
    """How spans become records here: ``decode_span`` (None without msgspec), ``from_dict`` and ``args``."""

    def __init__(self) -> None:
        self.name, self.decode_span, self._loads, self._dumps, self.errors = _codec()

    def from_dict(self, event: dict[str, Any]) -> TraceRecord:
        return DictRecord(event, self._dumps)

    def args(self, records: Sequence[TraceRecord]) -> list[dict[str, Any]]:
        """The args of each record as a dict ({} when absent or not an object), decoded in one call."""
        raws = [bytes(r.args) or b"null" for r in records]
        try:
            values = self._loads(b"[" + b",".join(raws) + b"]")
        except self.errors:
            values = [self._loads_or_none(raw) for raw in raws]
        return [v if type(v) is dict else {} for v in values]

    def _loads_or_none(self, raw: bytes) -> Any:
        try:
            return self._loads(raw)
        except self.errors:
            return None


_Codec = tuple[
    str,
    Callable[[bytes], list[Any]] | None,
    Callable[[bytes], Any],
    Callable[[Any], bytes],
    tuple[type[Exception], ...],
]


def _codec() -> _Codec:
    """(name, span decoder or None, loads, dumps, the errors they raise on bad input)."""
    loads: Callable[[bytes], Any] = json.loads
    dumps: Callable[[Any], bytes] = _stdlib_dumps
    try:
        orjson = importlib.import_module("orjson")
        loads, dumps = orjson.loads, orjson.dumps
    except ImportError:
        pass
    try:
        msgspec = importlib.import_module("msgspec")
    except ImportError:
        return "dicts", None, loads, dumps, (ValueError, TypeError)
    record_type = _msgspec_record(msgspec)
    span_decoder = msgspec.json.Decoder(list[record_type])  # type: ignore[valid-type]
    args_decoder = msgspec.json.Decoder()
    return "msgspec", span_decoder.decode, args_decoder.decode, dumps, (ValueError, TypeError, msgspec.DecodeError)


def _stdlib_dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _msgspec_record(msgspec: Any) -> type:
    """The msgspec Struct with the record's fields (untyped, so no event is refused for a field's type)."""
    fields: list[tuple[str, Any, Any]] = [(name, Any, None) for name in FIELDS]
    fields.append(("args", msgspec.Raw, msgspec.Raw(b"")))
    record: type = msgspec.defstruct("MsgspecRecord", fields, gc=False, module=__name__)
    return record


@functools.cache
def codec() -> RecordCodec:
    """The record codec of this process (built once: it looks up the installed decoders)."""
    return RecordCodec()

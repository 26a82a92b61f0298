"""Kineto events as compact records instead of dicts: the shape readers that touch every event use.

A record has the event's top-level fields as attributes (``ph``, ``cat``, ``name``, ``pid``,
``tid``, ``ts``, ``dur``, ``id``, ``bp``, ``s``; None when absent, any JSON value when present)
and its ``args`` as raw JSON text, decoded only by the readers that need it.

With msgspec installed (the explorer's extra), a span of the event array is decoded straight
into records: the decoder skips the keys no reader uses and copies ``args`` without parsing it,
about twice as fast as decoding the same span into dicts. Without it (the capture path does not
require it), records are made from the dicts the standard decoders give; readers see the same
records either way.

Readers that need a few args keys (ingest needs about a dozen of the hundreds Kineto writes)
ask for them with an ``ArgKeys``: ``codec().known_args(records, keys)`` decodes the args of a
whole batch in one call into objects with just those attributes, skipping everything else.
"""

from __future__ import annotations

import functools
import importlib
import json
from collections.abc import Callable, Sequence
from typing import Any, Protocol

FIELDS = ("ph", "cat", "name", "pid", "tid", "ts", "dur", "id", "bp", "s")
EMPTY_ARGS = b"{}"


class ArgKeys:
    """The args keys a reader needs, each under an attribute name (``{"external_id": "External id"}``).

    Hashable, so the decoder made for a set of keys is made once.
    """

    def __init__(self, **keys: str) -> None:
        self.attributes = tuple(keys)
        self.keys = tuple(keys.values())
        self._hash = hash((self.attributes, self.keys))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ArgKeys) and (self.attributes, self.keys) == (other.attributes, other.keys)

    def from_dict(self, args: dict[str, Any]) -> KnownArgs:
        found = KnownArgs(self.attributes)
        for attribute, key in zip(self.attributes, self.keys, strict=True):
            setattr(found, attribute, args.get(key))
        return found


class KnownArgs:
    """The keys of an ``ArgKeys`` read from one event's args (the path without msgspec): None when absent."""

    def __init__(self, attributes: tuple[str, ...]) -> None:
        for attribute in attributes:
            setattr(self, attribute, None)


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


def or_default(value: Any, default: Any) -> Any:
    """``value``, or ``default`` where the field was absent (None)."""
    return default if value is None else value


class DictRecord:
    """A record made from an event dict (the path without msgspec, and damaged spans)."""

    __slots__ = (*FIELDS, "args")

    def __init__(self, event: dict[str, Any], dumps: Callable[[Any], bytes]) -> None:
        self.take_fields(event)
        args = event.get("args")
        self.args: Any = b"" if args is None else _dump(args, dumps)

    def take_fields(self, event: dict[str, Any]) -> None:
        """The top-level fields of ``event`` (None where absent), all but ``args``."""
        get = event.get
        self.ph, self.cat, self.name, self.pid, self.tid = get("ph"), get("cat"), get("name"), get("pid"), get("tid")
        self.ts, self.dur, self.id, self.bp, self.s = get("ts"), get("dur"), get("id"), get("bp"), get("s")


class ParsedRecord(DictRecord):
    """A record of an event already decoded into a dict (readers that parse selected events), args as a dict."""

    __slots__ = ()

    def __init__(self, event: dict[str, Any]) -> None:
        self.take_fields(event)
        self.args = event.get("args")


def _dump(value: Any, dumps: Callable[[Any], bytes]) -> bytes:
    try:
        return dumps(value)
    except (TypeError, ValueError, OverflowError):  # orjson refuses ints beyond 64 bits
        return json.dumps(value, default=str).encode()


class RecordCodec:
    """How spans become records here: ``decode_span`` (None without msgspec), ``from_dict`` and ``args``."""

    def __init__(self) -> None:
        self.name, self.decode_span, self._loads, self._dumps, self.errors = _codec()
        self._msgspec_module: Any = importlib.import_module("msgspec") if self.decode_span is not None else None
        self._known: dict[ArgKeys, tuple[Callable[[bytes], Any], Callable[[bytes], Any], Any]] = {}

    def from_dict(self, event: dict[str, Any]) -> TraceRecord:
        return DictRecord(event, self._dumps)

    def args(self, records: Sequence[TraceRecord]) -> list[dict[str, Any]]:
        """The args of each record as a dict ({} when absent or not an object), decoded in one call."""
        return self._dicts([bytes(r.args) for r in records])

    @property
    def _msgspec(self) -> Any:
        """The msgspec module when spans are decoded with it (None without msgspec)."""
        return None if self.decode_span is None else self._msgspec_module

    def compact_args(self, records: Sequence[TraceRecord]) -> list[bytes]:
        """The args of each record as JSON object text without whitespace (``{}`` when absent or not an object).

        Records read by msgspec hold the args text as it is in the file (Kineto indents it over
        several lines); it is re-spaced here, never re-encoded. Records made from dicts already hold
        compact text.
        """
        if self._msgspec is None:
            return [raw if (raw := bytes(r.args))[:1] == b"{" else EMPTY_ARGS for r in records]
        compact = self._msgspec.json.format  # takes msgspec.Raw as it is: no copy to bytes first
        return [
            text if len(raw) and (text := compact(raw, indent=-1))[:1] == b"{" else EMPTY_ARGS
            for raw in [r.args for r in records]
        ]

    def compact_args_array(self, records: Sequence[TraceRecord]) -> tuple[bytes, list[Any]] | None:
        """The args of ``records`` as one JSON array text without whitespace (absent args as ``{}``)
        and each element's text (bytes-like), re-spaced in one call over the whole batch instead of
        one call per event; None without msgspec, or when the batch cannot be re-spaced.

        Unlike ``compact_args``, an element that is not an object is kept as it is: callers check.
        """
        if self._msgspec is None:
            return None
        msgspec = self._msgspec
        joined = b"[" + b",".join([r.args or EMPTY_ARGS for r in records]) + b"]"
        try:
            array = msgspec.json.format(joined, indent=-1)
            return array, self._raw_list(array)
        except self.errors:
            return None

    @functools.cached_property
    def _raw_list(self) -> Callable[[bytes], list[Any]]:
        raw: Any = self._msgspec.Raw
        decode: Callable[[bytes], list[Any]] = self._msgspec.json.Decoder(list[raw]).decode
        return decode

    def known_args_of_array(self, array: bytes, texts: Sequence[bytes], keys: ArgKeys) -> list[Any]:
        """``known_args`` of the elements of ``compact_args_array``'s ``array`` (its ``texts``),
        decoded in one call (msgspec only)."""
        batch, one, empty = self._known_decoders(keys)
        try:
            values: list[Any] = batch(array)
        except self.errors:
            values = [self._one_or_none(one, bytes(text)) for text in texts]
        return values if None not in values else [empty if v is None else v for v in values]

    def known_args(self, raws: Sequence[bytes], keys: ArgKeys) -> list[Any]:
        """For each args text (``compact_args``'s, or a record's raw args), an object whose attributes
        are ``keys``' attributes: the value of that key, None when absent or when the args are not an object.

        With msgspec, the whole batch is decoded in one call and every other key is skipped.
        """
        if self._msgspec is None:
            return [keys.from_dict(args) for args in self._dicts(raws)]
        batch, one, empty = self._known_decoders(keys)
        return [empty if v is None else v for v in self._decode_all(batch, one, raws)]

    def _known_decoders(self, keys: ArgKeys) -> tuple[Callable[[bytes], Any], Callable[[bytes], Any], Any]:
        if keys not in self._known:
            struct = _msgspec_known(self._msgspec, keys)
            optional = struct | None
            batch = self._msgspec.json.Decoder(list[optional]).decode  # type: ignore[valid-type]
            one = self._msgspec.json.Decoder(optional).decode
            self._known[keys] = (batch, one, struct())
        return self._known[keys]

    def _dicts(self, raws: Sequence[bytes]) -> list[dict[str, Any]]:
        return [v if type(v) is dict else {} for v in self._decode_all(self._loads, self._loads, raws)]

    def _decode_all(
        self, decode_list: Callable[[bytes], Any], decode_one: Callable[[bytes], Any], raws: Sequence[bytes]
    ) -> list[Any]:
        """Many args texts decoded in one call (absent args as null); if that fails, one by one, with
        None for each that cannot be decoded (or whose value the decoder refuses, such as a non-object)."""
        try:
            values: list[Any] = decode_list(b"[" + b",".join([raw or b"null" for raw in raws]) + b"]")
        except self.errors:
            values = [self._one_or_none(decode_one, raw) for raw in raws]
        return values

    def _one_or_none(self, decode: Callable[[bytes], Any], raw: bytes) -> Any:
        try:
            return decode(raw or b"null")
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
        return "dicts", None, loads, dumps, (ValueError, TypeError, RecursionError)
    record_type = _msgspec_record(msgspec)
    span_decoder = msgspec.json.Decoder(list[record_type])  # type: ignore[valid-type]
    args_decoder = msgspec.json.Decoder()
    decode_span = functools.partial(_checked_decode, span_decoder.decode)
    errors = (ValueError, TypeError, RecursionError, msgspec.DecodeError)
    return "msgspec", decode_span, args_decoder.decode, dumps, errors


def _checked_decode(decode: Callable[[bytes], list[Any]], span: bytes) -> list[Any]:
    """msgspec checks the UTF-8 of the strings it decodes, not of the args it copies nor of skipped keys:
    a span with invalid UTF-8 anywhere is refused (UnicodeDecodeError), so the event-by-event path
    replaces the bad bytes and records where they were, as it does for the other decoders."""
    if not span.isascii():
        span.decode("utf-8")
    return decode(span)


def _msgspec_known(msgspec: Any, keys: ArgKeys) -> type:
    """A msgspec Struct with one untyped field per key, named by its attribute (None when absent)."""
    fields = [(attribute, Any, None) for attribute in keys.attributes]
    rename = dict(zip(keys.attributes, keys.keys, strict=True))
    struct: type = msgspec.defstruct("KnownArgs", fields, rename=rename, gc=False, module=__name__)
    return struct


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

"""Events of the system and device traces as Perfetto ``TrackEvent`` packets: the writer
(``event_reader`` reads them back).

Encoding (see docs/format.md for the full description):

* Each file's tracks hang under its process track (packet 0). A track is declared once, by a
  ``TrackDescriptor`` packet written just before its first event.
* A slice is a ``TYPE_SLICE_BEGIN`` packet carrying the name, category, ``correlation_id``,
  debug annotations and flow ids, followed by a ``TYPE_SLICE_END`` packet on the same track.
  Slices on one track never overlap: the conversion moves an execution that overlaps the previous
  one to an extra lane track (``model.tracks.Lanes``), because Perfetto would otherwise nest or hide it.
* Instants are ``TYPE_INSTANT`` packets; counters ``TYPE_COUNTER`` packets on counter tracks.
* Event names, categories and annotation names are interned per file (``interned_data``),
  so a kernel name repeated a million times is stored once.
* A flow leaves a slice through ``flow_ids`` and ends on a slice through
  ``terminating_flow_ids``; the same id in two files of a session links them.
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from collections.abc import Collection
from typing import Any

from kinetoscope.format.perfetto_packets import wire
from kinetoscope.format.perfetto_packets.packets import PacketWriter
from kinetoscope.format.perfetto_packets.perfetto import CLOCK_REALTIME
from kinetoscope.format.perfetto_packets.perfetto import Sequence as PacketSequence

SLICE_BEGIN = 1
SLICE_END = 2
INSTANT = 3
COUNTER = 4

SEQ_INCREMENTAL_STATE_CLEARED = 1
_SEQ_NEEDS_INCREMENTAL_STATE = 2
_UNIT_SIZE_BYTES = 3
_CHILD_ORDERING_EXPLICIT = 3

# TracePacket fields
_P_TIMESTAMP, _P_SEQUENCE_ID, _P_TRACK_EVENT, _P_INTERNED, _P_FLAGS = 8, 10, 11, 12, 13
_P_CLOCK_ID, _P_TRACK_DESCRIPTOR = 58, 60
# TrackEvent fields
_E_CATEGORY_IID, _E_ANNOTATION, _E_TYPE, _E_NAME_IID, _E_TRACK = 3, 4, 9, 10, 11
_E_COUNTER, _E_DOUBLE_COUNTER, _E_FLOW, _E_TERMINATING_FLOW, _E_CORRELATION = 30, 44, 47, 48, 52
# InternedData fields
_I_CATEGORIES, _I_NAMES, _I_ANNOTATION_NAMES = 1, 2, 3

Annotations = Collection[tuple[str, Any]]

_INT64_LIMIT = 1 << 63
_UINT64_MAX = (1 << 64) - 1
_pack_fixed64 = struct.Struct("<Q").pack
_CORRELATION_KEY = wire.key(_E_CORRELATION, wire.VARINT)
_COUNTER_KEY = wire.key(_E_COUNTER, wire.VARINT)
_FLOW_KEY = wire.key(_E_FLOW, wire.FIXED64)
_TERMINATING_FLOW_KEY = wire.key(_E_TERMINATING_FLOW, wire.FIXED64)
_INT_VALUE_KEY = wire.key(4, wire.VARINT)
_ANNOTATION_KEY = wire.key(_E_ANNOTATION, wire.LENGTH)
_TIMESTAMP_KEY = wire.key(_P_TIMESTAMP, wire.VARINT)
_TRACK_EVENT_KEY = wire.key(_P_TRACK_EVENT, wire.LENGTH)
_PACKET_KEY = wire.key(1, wire.LENGTH)
_stamp = wire.field_encoder(_P_TIMESTAMP)
_SMALL_PACKET_LIMIT = 1 << 14
# Frame heads (packet key and length) of packets below 16 KiB.
_FRAME_HEADS = tuple(_PACKET_KEY + wire.length_prefix(size) for size in range(_SMALL_PACKET_LIMIT))
_BUFFER_BYTES = 1 << 20
_MAX_CACHED_HEADS = 100_000
# Values of one annotation name cached at most; names with more (ids, addresses) stop being cached.
_MAX_DISTINCT_PER_NAME = 4096


def _list_key(values: list[Any]) -> tuple[tuple[Any, ...], tuple[type, ...]]:
    """A list annotation's cache key: its items and their types (so [1] and [1.0] stay apart).

    Raises TypeError when an item cannot be hashed (a list or an object)."""
    return tuple(values), tuple(map(type, values))


def _frame_head(size: int) -> bytes:
    return _FRAME_HEADS[size] if size < _SMALL_PACKET_LIMIT else _PACKET_KEY + wire.varint(size)


class _Interner:
    """Text -> iid for one interned-data table; new entries wait in ``pending`` for the next packet."""

    def __init__(self, field_number: int) -> None:
        self.field_number = field_number
        self.ids: dict[str, int] = {}
        self.pending: list[bytes] = []

    def iid(self, text: str) -> int:
        found = self.ids.get(text)
        if found is not None:
            return found
        iid = len(self.ids) + 1
        self.ids[text] = iid
        entry = wire.uint_field(1, iid) + wire.string_field(2, text)
        self.pending.append(wire.bytes_field(self.field_number, entry))
        return iid


def annotation_value(value: Any) -> bytes:
    """The value fields of a ``DebugAnnotation`` for a JSON value."""
    kind = type(value)
    if kind is int:
        return _int_value(value)
    if kind is str:
        return wire.string_field(6, value)
    if kind is float:
        return wire.double_field(5, value)
    if kind is bool:
        return wire.bool_field(2, value)
    if isinstance(value, list) and value and all(isinstance(item, (bool, int, float, str)) for item in value):
        return b"".join(wire.bytes_field(12, annotation_value(item)) for item in value)
    return wire.string_field(9, json.dumps(value))


def _int_value(value: int) -> bytes:
    if 0 <= value < _INT64_LIMIT:
        return _INT_VALUE_KEY + wire.varint(value)
    if wire.fits_int64(value):
        return wire.int_field(4, value)
    if wire.fits_uint64(value):
        return wire.uint_field(3, value)
    return wire.string_field(6, str(value))


class EventFile:
    """Writes tracks, slices, instants and counters into one packet file after its header.

    Packets are framed as they are made and kept as pieces (frame head, timestamp, the rest)
    in a buffer joined once per megabyte. What repeats is encoded once and reused: the head of
    each (type, track, name, category), the end packet of each track, the packet bytes that
    follow the timestamp of a counter, and each annotation whose values repeat. A slice is
    assembled in one call, without a function per field or packet.
    """

    def __init__(self, writer: PacketWriter, seq: PacketSequence) -> None:
        self.writer = writer
        self.seq = seq
        self._names = _Interner(_I_NAMES)
        self._categories = _Interner(_I_CATEGORIES)
        self._annotation_names = _Interner(_I_ANNOTATION_NAMES)
        # Whether an interner has entries the next event packet must carry.
        self._interned_pending = False
        self._tracks: dict[str, int] = {}
        self._sequence_id = wire.uint_field(_P_SEQUENCE_ID, seq.sequence_id)
        self._prefix = (
            wire.uint_field(_P_CLOCK_ID, CLOCK_REALTIME)
            + self._sequence_id
            + wire.uint_field(_P_FLAGS, _SEQ_NEEDS_INCREMENTAL_STATE)
        )
        # An event packet after its timestamp, up to the event's length, when it carries no interned data.
        self._event_prefix = self._prefix + _TRACK_EVENT_KEY
        self.events_written = 0
        self._heads: dict[tuple[int, int, str, str], bytes] = {}
        self._annotation_keys: dict[str, bytes] = {}
        # (name, value) -> (type, encoded annotation), for names whose values repeat (device, stream, grid...);
        # a list's value is (its items, their types).
        self._encoded: dict[tuple[str, Any], tuple[type, bytes]] = {}
        self._distinct: Counter[str] = Counter()
        # Names whose values stopped repeating (ids, addresses): encoded each time, never cached; and
        # the bytes of their name and int value key, for ids encoded inline.
        self._varying: set[str] = set()
        self._varying_heads: dict[str, bytes] = {}
        self._counter_heads: dict[int, bytes] = {}
        self._counter_tails: dict[tuple[int, int] | None, bytes] = {}
        self._end_tails: dict[int, bytes] = {}
        self._buffer: list[bytes] = []
        self._buffered_packets = 0
        self._buffered_bytes = 0

    # -- tracks -------------------------------------------------------------------------------
    def track(self, key: str, name: str, parent: int | None = None, rank: int | None = None) -> int:
        """The uuid of the track ``key``, declared on first use under ``parent`` (default: the process)."""
        found = self._tracks.get(key)
        if found is not None:
            return found
        return self._declare(key, name, parent, rank, b"")

    def counter_track(self, key: str, name: str, parent: int | None = None, rank: int | None = None) -> int:
        """A counter track in bytes."""
        found = self._tracks.get(key)
        if found is not None:
            return found
        counter = wire.bytes_field(8, wire.uint_field(3, _UNIT_SIZE_BYTES))
        return self._declare(key, name, parent, rank, counter)

    def _declare(self, key: str, name: str, parent: int | None, rank: int | None, extra: bytes) -> int:
        uuid = self.seq.track_uuid(key)
        self._tracks[key] = uuid
        desc = wire.uint_field(1, uuid) + wire.string_field(2, name)
        desc += wire.uint_field(5, parent if parent is not None else self.seq.process_uuid)
        desc += wire.uint_field(11, _CHILD_ORDERING_EXPLICIT)
        if rank is not None:
            desc += wire.int_field(12, rank)
        self._append(self._sequence_id + wire.bytes_field(_P_TRACK_DESCRIPTOR, desc + extra))
        return uuid

    # -- events -------------------------------------------------------------------------------
    def slice(
        self,
        track: int,
        ts_ns: int,
        dur_ns: int,
        *,
        name: str,
        category: str,
        annotations: Annotations = (),
        correlation: int | None = None,
        flow_out: int | None = None,
        flow_in: int | None = None,
    ) -> None:
        """A slice: a begin packet with everything, then an end packet ``dur_ns`` later."""
        event = self._heads.get((SLICE_BEGIN, track, name, category)) or self._head(SLICE_BEGIN, track, name, category)
        if annotations:
            event += self._annotations(annotations)
        if correlation is not None and 0 <= correlation <= _UINT64_MAX:
            event += _CORRELATION_KEY + wire.varint(correlation)
        if flow_out is not None:
            event += _FLOW_KEY + _pack_fixed64(flow_out)
        if flow_in is not None:
            event += _TERMINATING_FLOW_KEY + _pack_fixed64(flow_in)
        prefix = self._interned_prefix() if self._interned_pending else self._event_prefix
        size = len(event)
        tail = prefix + wire.length_prefix(size) + event
        begin = _stamp(ts_ns if ts_ns > 0 else 0)
        end_ns = ts_ns + dur_ns if dur_ns > 0 else ts_ns
        end = _stamp(end_ns if end_ns > 0 else 0)
        end_tail = self._end_tails.get(track) or self._end_tail(track)
        begin_size = len(begin) + len(tail)
        end_size = len(end) + len(end_tail)
        self._buffer += (_frame_head(begin_size), begin, tail, _frame_head(end_size), end, end_tail)
        self._buffered_packets += 2
        self._buffered_bytes += begin_size + end_size
        self.events_written += 1
        if self._buffered_bytes >= _BUFFER_BYTES:
            self.flush()

    def _end_tail(self, track: int) -> bytes:
        event = wire.uint_field(_E_TYPE, SLICE_END) + wire.uint_field(_E_TRACK, track)
        end = self._end_tails[track] = self._tail(event)
        return end

    def instant(self, track: int, ts_ns: int, name: str, category: str, annotations: Annotations = ()) -> None:
        event = self._heads.get((INSTANT, track, name, category)) or self._head(INSTANT, track, name, category)
        if annotations:
            event += self._annotations(annotations)
        prefix = self._interned_prefix() if self._interned_pending else self._event_prefix
        self._stamped(ts_ns, prefix + wire.length_prefix(len(event)) + event)
        self.events_written += 1

    def counter(self, track: int, ts_ns: int, value: float) -> None:
        # Counters carry no interned data, so the packet after the timestamp depends on (track, value) alone.
        key = (track, value) if type(value) is int else None
        tail = self._counter_tails.get(key) if key is not None else None
        if tail is None:
            if key is not None and 0 <= value < _INT64_LIMIT:
                head = self._counter_heads.get(track) or self._counter_head(track)
                number = wire.varint(int(value))
                size = len(head) + len(_COUNTER_KEY) + len(number)
                tail = self._event_prefix + wire.length_prefix(size) + head + _COUNTER_KEY + number
            else:
                tail = self._tail(self._counter_event(track, value))
            if key is not None and len(self._counter_tails) < _MAX_CACHED_HEADS:
                self._counter_tails[key] = tail
        self._stamped(ts_ns, tail)

    def _counter_head(self, track: int) -> bytes:
        head = self._counter_heads[track] = wire.uint_field(_E_TYPE, COUNTER) + wire.uint_field(_E_TRACK, track)
        return head

    def _counter_event(self, track: int, value: float) -> bytes:
        head = self._counter_heads.get(track) or self._counter_head(track)
        if type(value) is int and wire.fits_int64(value):
            return head + wire.int_field(_E_COUNTER, value)
        return head + wire.double_field(_E_DOUBLE_COUNTER, float(value))

    def _annotations(self, annotations: Annotations) -> bytes:
        """The encoded annotations of an event: values seen before come from the cache, ids are encoded inline."""
        parts = []
        cached = self._encoded.get
        varying = self._varying_heads
        for item in annotations:
            value = item[1]
            kind = value.__class__
            if kind is list:
                try:
                    found = cached((item[0], _list_key(value)))
                except TypeError:  # a list holding lists or objects
                    found = None
            else:
                found = cached(item) if kind is not dict else None
            if found is not None and found[0] is kind:
                parts.append(found[1])
                continue
            head = varying.get(item[0]) if kind is int else None
            if head is not None and 0 <= value < _INT64_LIMIT:
                number = wire.varint(value)
                parts += (_ANNOTATION_KEY, wire.length_prefix(len(head) + len(number)), head, number)
                continue
            parts.append(self._annotation(item[0], value))
        return b"".join(parts)

    def _annotation(self, key: str, value: Any) -> bytes:
        """One encoded annotation, remembered while this name's values repeat (lists by their items)."""
        if key in self._varying:
            return self._encode_annotation(key, value)
        kind = type(value)
        try:
            cache_key = (key, _list_key(value) if kind is list else value)
            found = self._encoded.get(cache_key)
        except TypeError:  # an object, or a list holding lists or objects
            return self._encode_annotation(key, value)
        if found is not None and found[0] is kind:
            return found[1]
        encoded = self._encode_annotation(key, value)
        if found is None:
            self._remember(key, cache_key, kind, encoded)
        return encoded

    def _remember(self, key: str, cache_key: tuple[str, Any], kind: type, encoded: bytes) -> None:
        """Cache an annotation; a name with too many distinct values is encoded each time from then on."""
        self._distinct[key] += 1
        if self._distinct[key] <= _MAX_DISTINCT_PER_NAME:
            self._encoded[cache_key] = (kind, encoded)
            return
        self._varying.add(key)
        self._varying_heads[key] = self._annotation_keys[key] + _INT_VALUE_KEY
        self._encoded = {entry: found for entry, found in self._encoded.items() if entry[0] != key}

    def _encode_annotation(self, key: str, value: Any) -> bytes:
        prefix = self._annotation_keys.get(key)
        if prefix is None:
            prefix = self._annotation_keys[key] = wire.uint_field(1, self._annotation_names.iid(key))
            self._interned_pending = True
        if type(value) is int and 0 <= value < _INT64_LIMIT:
            number = wire.varint(value)
            return _ANNOTATION_KEY + wire.varint(len(prefix) + 1 + len(number)) + prefix + _INT_VALUE_KEY + number
        payload = prefix + annotation_value(value)
        return _ANNOTATION_KEY + wire.varint(len(payload)) + payload

    def _head(self, event_type: int, track: int, name: str, category: str) -> bytes:
        """The start of an event of this type, track, name and category (cached while there is room)."""
        head = wire.uint_field(_E_TYPE, event_type) + wire.uint_field(_E_TRACK, track)
        head += wire.uint_field(_E_NAME_IID, self._names.iid(name))
        head += wire.uint_field(_E_CATEGORY_IID, self._categories.iid(category))
        self._interned_pending = bool(self._names.pending or self._categories.pending or self._annotation_names.pending)
        if len(self._heads) < _MAX_CACHED_HEADS:
            self._heads[(event_type, track, name, category)] = head
        return head

    def _interned_prefix(self) -> bytes:
        """The packet bytes before the event's length, carrying the interned entries made since the last packet."""
        self._interned_pending = False
        return self._prefix + wire.bytes_field(_P_INTERNED, self._take_interned()) + _TRACK_EVENT_KEY

    def _tail(self, event: bytes) -> bytes:
        """The bytes of an event's packet after its timestamp, with no interned data."""
        return self._event_prefix + wire.length_prefix(len(event)) + event

    def _stamped(self, ts_ns: int, tail: bytes) -> None:
        """Buffer a packet made of a timestamp and ``tail``, framed."""
        stamp = _stamp(ts_ns if ts_ns > 0 else 0)
        size = len(stamp) + len(tail)
        self._buffer += (_frame_head(size), stamp, tail)
        self._buffered_packets += 1
        self._buffered_bytes += size
        if self._buffered_bytes >= _BUFFER_BYTES:
            self.flush()

    def _append(self, packet: bytes) -> None:
        self._buffer += (_frame_head(len(packet)), packet)
        self._buffered_packets += 1
        self._buffered_bytes += len(packet)
        if self._buffered_bytes >= _BUFFER_BYTES:
            self.flush()

    def flush(self) -> None:
        """Hand the buffered packets to the file (whole packets only)."""
        if self._buffer:
            self.writer.write_framed(b"".join(self._buffer), self._buffered_packets)
            self._buffer.clear()
            self._buffered_packets = 0
            self._buffered_bytes = 0

    def _take_interned(self) -> bytes:
        parts: list[bytes] = []
        for table in (self._categories, self._names, self._annotation_names):
            if table.pending:
                parts.extend(table.pending)
                table.pending.clear()
        return b"".join(parts)

"""Events of the system and device traces as Perfetto ``TrackEvent`` packets: writer and reader.

Encoding (see docs/format.md for the full description):

* Each file's tracks hang under its process track (packet 0). A track is declared once, by a
  ``TrackDescriptor`` packet written just before its first event.
* A slice is a ``TYPE_SLICE_BEGIN`` packet carrying the name, category, ``correlation_id``,
  debug annotations and flow ids, followed by a ``TYPE_SLICE_END`` packet on the same track.
  Slices on one track never overlap: ``Lanes`` moves an execution that overlaps the previous
  one to an extra lane track, because Perfetto would otherwise nest or hide it.
* Instants are ``TYPE_INSTANT`` packets; counters ``TYPE_COUNTER`` packets on counter tracks.
* Event names, categories and annotation names are interned per file (``interned_data``),
  so a kernel name repeated a million times is stored once.
* A flow leaves a slice through ``flow_ids`` and ends on a slice through
  ``terminating_flow_ids``; the same id in two files of a session links them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kinetoscope.format import wire
from kinetoscope.format.packets import PacketWriter, ReadStats
from kinetoscope.format.perfetto import CLOCK_REALTIME
from kinetoscope.format.perfetto import Sequence as PacketSequence
from kinetoscope.format.reader import iter_trace_packets

SLICE_BEGIN = 1
SLICE_END = 2
INSTANT = 3
COUNTER = 4

_SEQ_INCREMENTAL_STATE_CLEARED = 1
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

Annotations = Sequence[tuple[str, Any]]


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
    if isinstance(value, bool):
        return wire.bool_field(2, value)
    if isinstance(value, int):
        return _int_value(value)
    if isinstance(value, float):
        return wire.double_field(5, value)
    if isinstance(value, str):
        return wire.string_field(6, value)
    if isinstance(value, list) and value and all(isinstance(item, (bool, int, float, str)) for item in value):
        return b"".join(wire.bytes_field(12, annotation_value(item)) for item in value)
    return wire.string_field(9, json.dumps(value))


def _int_value(value: int) -> bytes:
    if wire.fits_int64(value):
        return wire.int_field(4, value)
    if wire.fits_uint64(value):
        return wire.uint_field(3, value)
    return wire.string_field(6, str(value))


class EventFile:
    """Writes tracks, slices, instants and counters into one packet file after its header."""

    def __init__(self, writer: PacketWriter, seq: PacketSequence) -> None:
        self.writer = writer
        self.seq = seq
        self._names = _Interner(_I_NAMES)
        self._categories = _Interner(_I_CATEGORIES)
        self._annotation_names = _Interner(_I_ANNOTATION_NAMES)
        self._tracks: dict[str, int] = {}
        self._sequence_id = wire.uint_field(_P_SEQUENCE_ID, seq.sequence_id)
        self._prefix = (
            wire.uint_field(_P_CLOCK_ID, CLOCK_REALTIME)
            + self._sequence_id
            + wire.uint_field(_P_FLAGS, _SEQ_NEEDS_INCREMENTAL_STATE)
        )
        self.events_written = 0

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
        self.writer.write(self._sequence_id + wire.bytes_field(_P_TRACK_DESCRIPTOR, desc + extra))
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
        body = self._named(SLICE_BEGIN, track, name, category, annotations)
        if correlation is not None and wire.fits_uint64(correlation):
            body += wire.uint_field(_E_CORRELATION, correlation)
        if flow_out is not None:
            body += wire.fixed64_field(_E_FLOW, flow_out)
        if flow_in is not None:
            body += wire.fixed64_field(_E_TERMINATING_FLOW, flow_in)
        self._packet(ts_ns, body)
        end = wire.uint_field(_E_TYPE, SLICE_END) + wire.uint_field(_E_TRACK, track)
        self._packet(ts_ns + max(dur_ns, 0), end)
        self.events_written += 1

    def instant(self, track: int, ts_ns: int, name: str, category: str, annotations: Annotations = ()) -> None:
        self._packet(ts_ns, self._named(INSTANT, track, name, category, annotations))
        self.events_written += 1

    def counter(self, track: int, ts_ns: int, value: float) -> None:
        body = wire.uint_field(_E_TYPE, COUNTER) + wire.uint_field(_E_TRACK, track)
        if isinstance(value, int) and wire.fits_int64(value):
            body += wire.int_field(_E_COUNTER, value)
        else:
            body += wire.double_field(_E_DOUBLE_COUNTER, float(value))
        self._packet(ts_ns, body)

    def _named(self, event_type: int, track: int, name: str, category: str, annotations: Annotations) -> bytes:
        body = wire.uint_field(_E_TYPE, event_type) + wire.uint_field(_E_TRACK, track)
        body += wire.uint_field(_E_NAME_IID, self._names.iid(name))
        body += wire.uint_field(_E_CATEGORY_IID, self._categories.iid(category))
        iid = self._annotation_names.iid
        for key, value in annotations:
            payload = wire.uint_field(1, iid(key)) + annotation_value(value)
            body += wire.bytes_field(_E_ANNOTATION, payload)
        return body

    def _packet(self, ts_ns: int, event: bytes) -> None:
        packet = wire.uint_field(_P_TIMESTAMP, max(ts_ns, 0)) + self._prefix
        interned = self._take_interned()
        if interned:
            packet += wire.bytes_field(_P_INTERNED, interned)
        self.writer.write(packet + wire.bytes_field(_P_TRACK_EVENT, event))

    def _take_interned(self) -> bytes:
        parts: list[bytes] = []
        for table in (self._categories, self._names, self._annotation_names):
            if table.pending:
                parts.extend(table.pending)
                table.pending.clear()
        return b"".join(parts)


class Lanes:
    """Places the intervals of one track on lanes so that no two slices on a lane overlap.

    An interval goes to the first lane whose last slice ended at or before its start, so
    slices on a lane are written in time order; otherwise it opens a new lane.
    """

    def __init__(self) -> None:
        self.ends_ns: list[int] = []

    def place(self, start_ns: int, end_ns: int) -> int:
        for lane, lane_end_ns in enumerate(self.ends_ns):
            if lane_end_ns <= start_ns:
                self.ends_ns[lane] = end_ns
                return lane
        self.ends_ns.append(end_ns)
        return len(self.ends_ns) - 1


# -- reading ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrackInfo:
    uuid: int
    name: str
    parent_uuid: int
    is_counter: bool


@dataclass(frozen=True)
class DecodedEvent:
    """One event read back from a system or device trace; ``kind`` is slice, instant or counter."""

    kind: str
    track: TrackInfo
    ts_ns: int
    dur_ns: int = 0
    name: str = ""
    category: str = ""
    correlation_id: int | None = None
    annotations: dict[str, Any] = field(default_factory=dict)
    flow_ids: tuple[int, ...] = ()
    terminating_flow_ids: tuple[int, ...] = ()
    value: float | None = None


@dataclass
class DecodeStats:
    """What decoding a file found besides its events."""

    read: ReadStats = field(default_factory=ReadStats)
    # Slices begun but never ended (the file was cut short), and ends without a begin.
    unfinished_slices: int = 0
    unmatched_ends: int = 0
    unknown_tracks: int = 0


class _DecodeState:
    def __init__(self) -> None:
        self.tracks: dict[int, TrackInfo] = {}
        self.names: dict[int, str] = {}
        self.categories: dict[int, str] = {}
        self.annotation_names: dict[int, str] = {}
        self.open: dict[int, list[Any]] = {}

    def clear_interned(self) -> None:
        self.names.clear()
        self.categories.clear()
        self.annotation_names.clear()

    def intern(self, interned: Any) -> None:
        self.names.update((entry.iid, entry.name) for entry in interned.event_names)
        self.categories.update((entry.iid, entry.name) for entry in interned.event_categories)
        self.annotation_names.update((entry.iid, entry.name) for entry in interned.debug_annotation_names)


def read_tracks(path: Path) -> dict[int, TrackInfo]:
    """Every track a file declares, by uuid."""
    state = _DecodeState()
    for packet in iter_trace_packets(path):
        if packet.HasField("track_descriptor"):
            _add_track(state, packet.track_descriptor)
    return state.tracks


def iter_events(path: Path, stats: DecodeStats | None = None) -> Iterator[DecodedEvent]:
    """The slices, instants and counters of a system or device trace, in file order.

    A slice is yielded when its end packet is read. Interned names are resolved, and
    annotation values come back as the Python values that were written.
    """
    stats = stats if stats is not None else DecodeStats()
    state = _DecodeState()
    for packet in iter_trace_packets(path, stats.read):
        if packet.sequence_flags & _SEQ_INCREMENTAL_STATE_CLEARED:
            state.clear_interned()
        if packet.HasField("interned_data"):
            state.intern(packet.interned_data)
        if packet.HasField("track_descriptor"):
            _add_track(state, packet.track_descriptor)
        if packet.HasField("track_event"):
            yield from _decode_event(state, packet, stats)
    stats.unfinished_slices += sum(len(stack) for stack in state.open.values())


def _add_track(state: _DecodeState, desc: Any) -> None:
    name = desc.name or (desc.process.process_name if desc.HasField("process") else "")
    state.tracks[desc.uuid] = TrackInfo(desc.uuid, name, desc.parent_uuid, desc.HasField("counter"))


def _decode_event(state: _DecodeState, packet: Any, stats: DecodeStats) -> Iterator[DecodedEvent]:
    event = packet.track_event
    track = state.tracks.get(event.track_uuid)
    if track is None:
        stats.unknown_tracks += 1
        track = TrackInfo(event.track_uuid, f"track {event.track_uuid}", 0, False)
    if event.type == SLICE_BEGIN:
        state.open.setdefault(event.track_uuid, []).append((packet.timestamp, _attributes(state, event)))
    elif event.type == SLICE_END:
        stack = state.open.get(event.track_uuid)
        if not stack:
            stats.unmatched_ends += 1
            return
        begin_ns, attributes = stack.pop()
        yield DecodedEvent("slice", track, begin_ns, packet.timestamp - begin_ns, **attributes)
    elif event.type == INSTANT:
        yield DecodedEvent("instant", track, packet.timestamp, **_attributes(state, event))
    elif event.type == COUNTER:
        value = event.double_counter_value if event.HasField("double_counter_value") else event.counter_value
        yield DecodedEvent("counter", track, packet.timestamp, value=value)


def _attributes(state: _DecodeState, event: Any) -> dict[str, Any]:
    names = state.annotation_names
    return {
        "name": event.name or state.names.get(event.name_iid, ""),
        "category": ",".join(state.categories.get(iid, "") for iid in event.category_iids),
        "correlation_id": event.correlation_id if event.HasField("correlation_id") else None,
        "annotations": {a.name or names.get(a.name_iid, ""): decode_annotation(a) for a in event.debug_annotations},
        "flow_ids": tuple(event.flow_ids),
        "terminating_flow_ids": tuple(event.terminating_flow_ids),
    }


def decode_annotation(annotation: Any) -> Any:
    """The Python value of a ``DebugAnnotation`` written by ``annotation_value``."""
    if annotation.array_values:
        return [decode_annotation(item) for item in annotation.array_values]
    kind = annotation.WhichOneof("value")
    if kind == "legacy_json_value":
        try:
            return json.loads(annotation.legacy_json_value)
        except ValueError:
            return annotation.legacy_json_value
    if kind is None:
        return None
    return getattr(annotation, kind)

"""Events of the system and device traces read back from their ``TrackEvent`` packets (written by
``events.EventFile``): the tracks a file declares and its slices, instants and counters with their
annotations."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kinetoscope.format.perfetto_packets.events import (
    COUNTER,
    INSTANT,
    SEQ_INCREMENTAL_STATE_CLEARED,
    SLICE_BEGIN,
    SLICE_END,
)
from kinetoscope.format.perfetto_packets.packets import ReadStats
from kinetoscope.format.perfetto_packets.perfetto import text
from kinetoscope.format.perfetto_packets.reader import iter_trace_packets


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
        self.names.update((entry.iid, text(entry.name)) for entry in interned.event_names)
        self.categories.update((entry.iid, text(entry.name)) for entry in interned.event_categories)
        self.annotation_names.update((entry.iid, text(entry.name)) for entry in interned.debug_annotation_names)


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
        if packet.sequence_flags & SEQ_INCREMENTAL_STATE_CLEARED:
            state.clear_interned()
        if packet.HasField("interned_data"):
            state.intern(packet.interned_data)
        if packet.HasField("track_descriptor"):
            _add_track(state, packet.track_descriptor)
        if packet.HasField("track_event"):
            yield from _decode_event(state, packet, stats)
    stats.unfinished_slices += sum(len(stack) for stack in state.open.values())


def _add_track(state: _DecodeState, desc: Any) -> None:
    name = text(desc.name or (desc.process.process_name if desc.HasField("process") else ""))
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
        "name": text(event.name) or state.names.get(event.name_iid, ""),
        "category": ",".join(state.categories.get(iid, "") for iid in event.category_iids),
        "correlation_id": event.correlation_id if event.HasField("correlation_id") else None,
        "annotations": {
            text(a.name) or names.get(a.name_iid, ""): decode_annotation(a) for a in event.debug_annotations
        },
        "flow_ids": tuple(event.flow_ids),
        "terminating_flow_ids": tuple(event.terminating_flow_ids),
    }


def decode_annotation(annotation: Any) -> Any:
    """The Python value of a ``DebugAnnotation`` written by ``annotation_value``."""
    if annotation.array_values:
        return [decode_annotation(item) for item in annotation.array_values]
    kind = annotation.WhichOneof("value")
    if kind == "legacy_json_value":
        raw = text(annotation.legacy_json_value)
        try:
            return json.loads(raw)
        except (ValueError, RecursionError):  # not JSON, or nested deeper than Python recurses: kept as text
            return raw
    if kind is None:
        return None
    value = getattr(annotation, kind)
    return text(value) if kind == "string_value" else value

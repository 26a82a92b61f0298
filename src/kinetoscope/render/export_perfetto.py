"""A merged trace as Perfetto protobuf packets (``TracePacket`` stream, opens in ui.perfetto.dev).

Slices are written in time order as begin/end pairs on their thread or stream track. Work
that overlaps on one stream without nesting (allowed on devices) cannot share a track, so it
goes to an extra lane track under the same process: nothing is dropped or clipped. Flows
are ``flow_ids`` on the slice they leave and ``terminating_flow_ids`` on the one they reach.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

import pyarrow as pa

from kinetoscope.format.perfetto_packets.packets import frame
from kinetoscope.format.perfetto_packets.perfetto import protos, stable_id
from kinetoscope.render.export_tracks import ExportCounts, TrackNames

SEQUENCE_ID = 1


def _uuid(*parts: object) -> int:
    return stable_id("export", *parts)


@dataclass
class _Writer:
    out: IO[bytes]
    pb: Any = field(default_factory=protos)
    packets: int = 0

    def packet(self, ts_ns: int | None = None) -> Any:
        packet = self.pb.TracePacket()
        packet.trusted_packet_sequence_id = SEQUENCE_ID
        if self.packets == 0:
            packet.first_packet_on_sequence = True
            packet.sequence_flags = self.pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
        else:
            packet.sequence_flags = self.pb.TracePacket.SEQ_NEEDS_INCREMENTAL_STATE
        if ts_ns is not None:
            packet.timestamp = ts_ns
        return packet

    def emit(self, packet: Any) -> None:
        self.out.write(frame(packet.SerializeToString()))
        self.packets += 1


@dataclass
class _Lanes:
    """Open slices per (track, lane); lane 0 is the thread or stream track itself."""

    writer: _Writer
    lanes: dict[tuple[int, int], list[list[int]]] = field(default_factory=dict)
    described: set[int] = field(default_factory=set)
    # (end ns, -order, lane uuid, pid, tid, lane) of every open slice
    pending: list[tuple[int, int, int, int, int, int]] = field(default_factory=list)

    def open(self, pid: int, tid: int, end_ns: int, order: int) -> int:
        """Place a slice on the first lane where it nests; returns the lane's track uuid."""
        stacks = self.lanes.setdefault((pid, tid), [])
        lane = next((i for i, stack in enumerate(stacks) if not stack or stack[-1] >= end_ns), len(stacks))
        if lane == len(stacks):
            stacks.append([])
        stacks[lane].append(end_ns)
        uuid = self._lane_uuid(pid, tid, lane)
        heapq.heappush(self.pending, (end_ns, -order, uuid, pid, tid, lane))
        return uuid

    def _lane_uuid(self, pid: int, tid: int, lane: int) -> int:
        if lane == 0:
            return _uuid(pid, tid)
        uuid = _uuid(pid, tid, lane)
        if uuid not in self.described:
            packet = self.writer.packet()
            packet.track_descriptor.uuid = uuid
            packet.track_descriptor.parent_uuid = _uuid(pid)
            packet.track_descriptor.name = f"{tid} · overlapping lane {lane}"
            self.writer.emit(packet)
            self.described.add(uuid)
        return uuid

    def close_until(self, ts_ns: int | None) -> None:
        while self.pending and (ts_ns is None or self.pending[0][0] <= ts_ns):
            end_ns, _, uuid, pid, tid, lane = heapq.heappop(self.pending)
            packet = self.writer.packet(end_ns)
            packet.track_event.type = self.writer.pb.TrackEvent.TYPE_SLICE_END
            packet.track_event.track_uuid = uuid
            self.writer.emit(packet)
            self.lanes[(pid, tid)][lane].pop()


def _describe(writer: _Writer, names: TrackNames) -> None:
    for pid, track in sorted(names.processes().items()):
        packet = writer.packet()
        packet.track_descriptor.uuid = _uuid(pid)
        packet.track_descriptor.process.pid = pid
        packet.track_descriptor.process.process_name = names.process_label(track)
        writer.emit(packet)
    for track in names.tracks:
        packet = writer.packet()
        desc = packet.track_descriptor
        desc.uuid, desc.parent_uuid = _uuid(track.out_pid, track.out_tid), _uuid(track.out_pid)
        desc.thread.pid, desc.thread.tid = track.out_pid, track.out_tid
        desc.thread.thread_name = track.thread_name
        writer.emit(packet)


def _slice(writer: _Writer, lanes: _Lanes, row: dict[str, Any], order: int) -> None:
    lanes.close_until(row["ts_ns"])
    pb = writer.pb
    packet = writer.packet(row["ts_ns"])
    event = packet.track_event
    event.name = row["name"]
    event.categories.append(row["category"])
    event.flow_ids.extend(row["flows_out"])
    event.terminating_flow_ids.extend(row["flows_in"])
    if row["args"] and row["args"] != "{}":
        annotation = event.debug_annotations.add()
        annotation.name, annotation.string_value = "args", row["args"]
    if row["dur_ns"] > 0:
        end_ns = row["ts_ns"] + row["dur_ns"]
        event.type = pb.TrackEvent.TYPE_SLICE_BEGIN
        event.track_uuid = lanes.open(row["out_pid"], row["out_tid"], end_ns, order)
    else:
        event.type = pb.TrackEvent.TYPE_INSTANT
        event.track_uuid = _uuid(row["out_pid"], row["out_tid"])
    writer.emit(packet)


def _counters(writer: _Writer, counters: Iterable[pa.RecordBatch]) -> int:
    described: set[int] = set()
    count = 0
    for batch in counters:
        for row in batch.to_pylist():
            uuid = _uuid(row["out_pid"], "counter", row["name"])
            if uuid not in described:
                packet = writer.packet()
                packet.track_descriptor.uuid, packet.track_descriptor.parent_uuid = uuid, _uuid(row["out_pid"])
                packet.track_descriptor.name = row["name"]
                packet.track_descriptor.counter.unit_name = row["unit"] or ""
                writer.emit(packet)
                described.add(uuid)
            packet = writer.packet(row["ts_ns"])
            packet.track_event.type = writer.pb.TrackEvent.TYPE_COUNTER
            packet.track_event.track_uuid = uuid
            packet.track_event.double_counter_value = row["value"]
            writer.emit(packet)
            count += 1
    return count


def write_perfetto(
    out: IO[bytes], names: TrackNames, slices: Iterable[pa.RecordBatch], counters: Iterable[pa.RecordBatch]
) -> ExportCounts:
    """Write the whole trace (``slices`` in time order); returns what it holds."""
    writer = _Writer(out)
    _describe(writer, names)
    lanes = _Lanes(writer)
    order = arrows = 0
    for batch in slices:
        for row in batch.to_pylist():
            _slice(writer, lanes, row, order)
            order += 1
            arrows += len(row["flows_out"])
    lanes.close_until(None)
    return ExportCounts(order, _counters(writer, counters), arrows)

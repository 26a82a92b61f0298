"""Perfetto ``TracePacket`` building blocks shared by every kinetoscope event and sample file.

Every file opens with a header packet: a process track descriptor whose
``process_labels`` carry ``key=value`` pairs that identify the session, the process and
the rank. The second packet is a clock snapshot; all timestamps are CLOCK_REALTIME
nanoseconds (the clock Kineto stamps the framework trace with), so the files of all
ranks on one host, and of hosts with synchronised clocks, line up.

The Perfetto protos come from the ``perfetto`` package and are imported on first use.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from functools import cache
from types import ModuleType
from typing import Any

FORMAT_MAJOR = 1
FORMAT_MINOR = 0

CLOCK_REALTIME = 1
CLOCK_MONOTONIC = 3
CLOCK_BOOTTIME = 6

HEADER_PREFIX = "kinetoscope."


@cache
def protos() -> ModuleType:
    """The Perfetto trace protos (``perfetto_trace_pb2``), imported on first use."""
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2

    module: ModuleType = perfetto_trace_pb2
    return module


def text(value: str | bytes) -> str:
    """A string field of a decoded packet as text: protobuf hands back the raw bytes of a proto2
    string that is not valid UTF-8 (a damaged file); those are decoded with U+FFFD for bad bytes."""
    return value if isinstance(value, str) else value.decode("utf-8", "replace")


@dataclass(frozen=True)
class FileHeader:
    """Identity carried by the first packet of every kinetoscope packet file."""

    file_kind: str
    session_id: str
    instance_id: str
    hostname: str
    pid: int
    rank: int
    local_rank: int
    world_size: int
    backend: str = ""
    format_major: int = FORMAT_MAJOR
    format_minor: int = FORMAT_MINOR
    extra: dict[str, str] = field(default_factory=dict)

    def labels(self) -> list[str]:
        pairs = {
            "format": f"{self.format_major}.{self.format_minor}",
            "file": self.file_kind,
            "session": self.session_id,
            "instance": self.instance_id,
            "host": self.hostname,
            "pid": str(self.pid),
            "rank": str(self.rank),
            "local_rank": str(self.local_rank),
            "world_size": str(self.world_size),
            "backend": self.backend,
            **self.extra,
        }
        return [f"{HEADER_PREFIX}{key}={value}" for key, value in pairs.items()]

    @classmethod
    def from_labels(cls, labels: list[str]) -> FileHeader:
        texts = [text(label) for label in labels]
        pairs = dict(
            label[len(HEADER_PREFIX) :].split("=", 1)
            for label in texts
            if label.startswith(HEADER_PREFIX) and "=" in label
        )
        major, _, minor = pairs.pop("format", "0.0").partition(".")
        known = {key: pairs.pop(key, "") for key in ("file", "session", "instance", "host", "pid", "rank")}
        local_rank = pairs.pop("local_rank", "0")
        world_size = pairs.pop("world_size", "1")
        backend = pairs.pop("backend", "")
        return cls(
            file_kind=known["file"],
            session_id=known["session"],
            instance_id=known["instance"],
            hostname=known["host"],
            pid=_int(known["pid"]),
            rank=_int(known["rank"]),
            local_rank=_int(local_rank),
            world_size=_int(world_size, 1),
            backend=backend,
            format_major=_int(major),
            format_minor=_int(minor),
            extra=pairs,
        )

    @property
    def process_name(self) -> str:
        return f"rank {self.rank} · {self.hostname} pid {self.pid} · {self.file_kind}"


def _int(text: str, default: int = 0) -> int:
    try:
        return int(text)
    except ValueError:
        return default


def stable_id(*parts: object, bits: int = 63) -> int:
    """A deterministic non-zero id from ``parts`` (track uuids, sequence ids)."""
    digest = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    value = int.from_bytes(digest, "little") & ((1 << bits) - 1)
    return value or 1


@dataclass(frozen=True)
class Sequence:
    """The ids one file writes with: its packet sequence and its process track."""

    sequence_id: int
    process_uuid: int

    @classmethod
    def for_file(cls, header: FileHeader) -> Sequence:
        return cls(
            sequence_id=stable_id(header.session_id, header.file_kind, bits=31),
            process_uuid=stable_id(header.session_id, header.file_kind, "process"),
        )

    def track_uuid(self, name: str) -> int:
        return _track_uuid(self.process_uuid, name)


@cache
def _track_uuid(process_uuid: int, name: str) -> int:
    return stable_id(process_uuid, name)


def header_packet(header: FileHeader, seq: Sequence) -> Any:
    pb = protos()
    packet = pb.TracePacket()
    packet.trusted_packet_sequence_id = seq.sequence_id
    packet.first_packet_on_sequence = True
    packet.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    desc = packet.track_descriptor
    desc.uuid = seq.process_uuid
    desc.process.pid = header.pid
    desc.process.process_name = header.process_name
    desc.process.process_labels.extend(header.labels())
    return packet


def read_clocks_ns() -> dict[int, int]:
    return {
        CLOCK_REALTIME: time.clock_gettime_ns(time.CLOCK_REALTIME),
        CLOCK_MONOTONIC: time.clock_gettime_ns(time.CLOCK_MONOTONIC),
        CLOCK_BOOTTIME: time.clock_gettime_ns(getattr(time, "CLOCK_BOOTTIME", time.CLOCK_MONOTONIC)),
    }


def clock_snapshot_packet(seq: Sequence, clocks_ns: dict[int, int]) -> Any:
    pb = protos()
    packet = pb.TracePacket()
    packet.trusted_packet_sequence_id = seq.sequence_id
    snapshot = packet.clock_snapshot
    snapshot.primary_trace_clock = CLOCK_REALTIME
    for clock_id, value_ns in clocks_ns.items():
        clock = snapshot.clocks.add()
        clock.clock_id = clock_id
        clock.timestamp = value_ns
    return packet


def counter_track_packet(seq: Sequence, name: str, unit: str) -> Any:
    """Descriptor of a counter track under the file's process; ``unit`` is "%" or "bytes"."""
    pb = protos()
    packet = pb.TracePacket()
    packet.trusted_packet_sequence_id = seq.sequence_id
    desc = packet.track_descriptor
    desc.uuid = seq.track_uuid(name)
    desc.parent_uuid = seq.process_uuid
    desc.name = name
    if unit == "bytes":
        desc.counter.unit = pb.CounterDescriptor.UNIT_SIZE_BYTES
    else:
        desc.counter.unit_name = unit
    return packet


def counter_value_packet(seq: Sequence, track_uuid: int, ts_ns: int, value: float) -> Any:
    pb = protos()
    packet = pb.TracePacket()
    packet.timestamp = ts_ns
    packet.timestamp_clock_id = CLOCK_REALTIME
    packet.trusted_packet_sequence_id = seq.sequence_id
    event = packet.track_event
    event.type = pb.TrackEvent.TYPE_COUNTER
    event.track_uuid = track_uuid
    event.double_counter_value = value
    return packet

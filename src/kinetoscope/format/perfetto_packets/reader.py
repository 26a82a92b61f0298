"""Reading kinetoscope packet files: the reader shared by ``dump``, ``verify`` and ingest."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from google.protobuf.message import DecodeError

from kinetoscope._errors import FormatError
from kinetoscope.format.perfetto_packets.packets import ReadStats, iter_packets
from kinetoscope.format.perfetto_packets.perfetto import FORMAT_MAJOR, FileHeader, protos, text


@dataclass
class PacketFile:
    """A packet file read as far as it goes: its header, packets and what was lost."""

    path: Path
    header: FileHeader | None
    packets: list[Any] = field(default_factory=list)
    stats: ReadStats = field(default_factory=ReadStats)

    @property
    def undecodable(self) -> int:
        """Packets that were framed correctly but did not decode as a TracePacket."""
        return self.stats.undecodable

    @property
    def problems(self) -> list[str]:
        found = []
        if self.header is None:
            found.append(f"{self.path}: no kinetoscope header packet (first packet)")
        if self.stats.truncated:
            found.append(f"{self.path}: byte {self.stats.truncated_at}: {self.stats.damage}")
        if self.undecodable:
            found.append(f"{self.path}: {self.undecodable} packet(s) did not decode")
        return found


def iter_trace_packets(path: Path, stats: ReadStats | None = None) -> Iterator[Any]:
    """Decoded ``TracePacket`` messages of ``path``; ``stats`` records framing, truncation and
    the packets that are framed but do not decode (skipped, and counted in ``stats.undecodable``)."""
    stats = stats if stats is not None else ReadStats()
    pb = protos()
    for payload in iter_packets(path, stats):
        packet = pb.TracePacket()
        try:
            packet.ParseFromString(payload)
        except DecodeError:
            stats.undecodable += 1
            continue
        yield packet


def header_of(packet: Any) -> FileHeader | None:
    """The kinetoscope header a packet carries, or None if it carries none."""
    if not packet.HasField("track_descriptor"):
        return None
    desc = packet.track_descriptor
    if not desc.HasField("process"):
        return None
    labels = [text(label) for label in desc.process.process_labels]
    if not any(label.startswith("kinetoscope.file=") for label in labels):
        return None
    return FileHeader.from_labels(labels)


def read_packet_file(path: Path) -> PacketFile:
    """Read every whole packet of ``path``.

    Raises ``FormatError`` if the file cannot be opened or was written by an
    incompatible major format version; a truncated tail is reported in ``stats``.
    """
    pb = protos()
    result = PacketFile(path=path, header=None)
    try:
        payloads = list(iter_packets(path, result.stats))
    except OSError as exc:
        raise FormatError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    for index, payload in enumerate(payloads):
        packet = pb.TracePacket()
        try:
            packet.ParseFromString(payload)
        except DecodeError:
            result.stats.undecodable += 1
            continue
        if index == 0:
            result.header = header_of(packet)
        result.packets.append(packet)
    _check_version(result)
    return result


def _check_version(result: PacketFile) -> None:
    header = result.header
    if header is not None and header.format_major > FORMAT_MAJOR:
        raise FormatError(
            f"{result.path}: written in format {header.format_major}.{header.format_minor}; "
            f"this kinetoscope reads format {FORMAT_MAJOR}.x. Upgrade kinetoscope to read it."
        )

"""Where the system and device traces are written: packet files of a session, finished by rename."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Protocol

from kinetoscope.format.files import discard
from kinetoscope.format.perfetto_packets.packets import PacketWriter
from kinetoscope.format.perfetto_packets.perfetto import FileHeader, Sequence, clock_snapshot_packet, header_packet
from kinetoscope.format.session_files import session_dir as layout


class PacketFiles(Protocol):
    """Creates the packet files of one session (header and clock packets written) and finishes them."""

    def open(self, name: str, file_kind: str) -> tuple[PacketWriter, Sequence]: ...

    def finish(self, writer: PacketWriter) -> None: ...

    def discard(self, writer: PacketWriter) -> None: ...


class SessionPacketFiles:
    """Packet files in a session directory: written as ``<name>.partial``, renamed when finished."""

    def __init__(self, directory: Path, header: FileHeader, clocks_ns: dict[int, int]) -> None:
        self.directory = directory
        self.header = header
        self.clocks_ns = clocks_ns

    def open(self, name: str, file_kind: str) -> tuple[PacketWriter, Sequence]:
        header = dataclasses.replace(self.header, file_kind=file_kind)
        seq = Sequence.for_file(header)
        writer = PacketWriter(self.directory / layout.partial_name(name))
        writer.write(header_packet(header, seq).SerializeToString())
        writer.write(clock_snapshot_packet(seq, self.clocks_ns).SerializeToString())
        return writer, seq

    def finish(self, writer: PacketWriter) -> None:
        writer.close()
        os.replace(writer.path, writer.path.with_name(writer.path.name.removesuffix(layout.PARTIAL_SUFFIX)))

    def discard(self, writer: PacketWriter) -> None:
        writer.close(sync=False)
        discard(writer.path)

"""Framing of packet files: a file is a protobuf ``Trace`` (``repeated TracePacket packet = 1``).

Each packet is written as its field tag, a varint length and the serialized packet, so
the file parses as one ``Trace`` message and can also be read packet by packet. A file
cut short by a crash is read up to its last whole packet; the cut is reported, never
hidden. Damage in the middle (a bad length prefix, overwritten bytes) costs only the damaged
stretch: the reader resynchronises on the next place where two whole packets follow each other
(or one ends the file), and counts the bytes it skipped.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from kinetoscope.format.perfetto_packets.wire import varint

_PACKET_TAG = b"\x0a"  # field 1, wire type 2 (length-delimited)
READ_CHUNK_BYTES = 1 << 20
_MAX_UNSIZED_READ_BYTES = 1 << 28  # a packet of a stream without a size: larger ones are read as cut short


def frame(payload: bytes) -> bytes:
    """One packet as it appears in a file."""
    return _PACKET_TAG + varint(len(payload)) + payload


class PacketWriter:
    """Appends framed packets to a file; ``flush`` hands them to the OS so a killed process keeps them."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: BinaryIO = open(path, "wb")  # noqa: SIM115 - closed in close()
        self.packets_written = 0
        self.bytes_written = 0

    def write(self, payload: bytes) -> None:
        framed = frame(payload)
        self._file.write(framed)
        self.packets_written += 1
        self.bytes_written += len(framed)

    def write_framed(self, framed: bytes, packets: int) -> None:
        """Append ``packets`` packets already framed by the caller (as ``frame`` does), in one write."""
        self._file.write(framed)
        self.packets_written += packets
        self.bytes_written += len(framed)

    def flush(self) -> None:
        self._file.flush()

    def close(self, *, sync: bool = True) -> None:
        if self._file.closed:
            return
        self._file.flush()
        if sync:
            os.fsync(self._file.fileno())
        self._file.close()

    @property
    def closed(self) -> bool:
        return self._file.closed


@dataclass
class ReadStats:
    """What a read of a packet file found besides its packets."""

    packets: int = 0
    bytes_read: int = 0
    truncated: bool = False
    # Byte offset of the first byte that could not be read as a whole packet.
    truncated_at: int | None = None
    problem: str = ""
    # Packets framed correctly that did not decode as a TracePacket (counted by the decoding readers).
    undecodable: int = 0
    # Damaged stretches skipped by resynchronising on the next whole packets, and their bytes.
    resyncs: int = 0
    skipped_bytes: int = 0

    def damaged(self, offset: int, problem: str) -> None:
        """Records damage at ``offset``; the first damage names the place, later ones are counted."""
        if not self.truncated:
            self.truncated, self.truncated_at, self.problem = True, offset, problem

    @property
    def damage(self) -> str:
        """The first problem, with what resynchronising skipped when it skipped anything."""
        if not self.resyncs:
            return self.problem
        return f"{self.problem}; read on past {self.resyncs} damaged stretch(es), {self.skipped_bytes} bytes skipped"


def _decode_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int] | None:
    result = 0
    shift = 0
    end = len(buf)
    while pos < end:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes")
    return None


def iter_packets(path: Path, stats: ReadStats | None = None) -> Iterator[bytes]:
    """Yield each serialized packet of ``path``; ``stats`` records counts and any truncation.

    Reads in bounded chunks, so memory stays flat however large the file is. Fields other
    than ``packet`` (field 1) are skipped, as a protobuf parser would.
    """
    stats = stats if stats is not None else ReadStats()
    with open(path, "rb") as handle:
        yield from _iter_stream(handle, stats)


def _iter_stream(handle: BinaryIO, stats: ReadStats) -> Iterator[bytes]:
    buf = b""
    base = 0  # file offset of buf[0]
    eof = False
    while True:
        pos = 0
        while True:
            try:
                item = _next_packet(buf, pos)
            except ValueError as exc:
                problem = f"corrupt data at byte {base + pos}: {exc}"
                yield from _salvage(buf[pos:] + handle.read(), base + pos, problem, stats)
                return
            if item is None:
                break
            payload, pos, is_packet = item
            if is_packet:
                stats.packets += 1
                yield payload
        base += pos
        buf = buf[pos:]
        if eof:
            break
        chunk = handle.read(_read_size(handle, _needed(buf)))
        if not chunk:
            eof = True
            continue
        buf += chunk
    stats.bytes_read = base
    if buf:
        yield from _salvage(buf, base, f"last {len(buf)} bytes do not form a whole packet (file cut short?)", stats)


def _salvage(rest: bytes, offset: int, problem: str, stats: ReadStats) -> Iterator[bytes]:
    """The whole packets of ``rest`` (the file from ``offset`` on, where damage was found): each
    damaged stretch is skipped up to the next place two whole packets follow each other, or one
    ends the file. Only a damaged file is held in memory this way, from its first damage on."""
    pos = 0
    while pos < len(rest):
        start = _resync(rest, pos)
        stats.damaged(offset + pos, problem)
        stats.bytes_read = offset + pos
        if start is None:
            return
        stats.resyncs += 1
        stats.skipped_bytes += start - pos
        pos = start
        while True:
            try:
                item = _next_packet(rest, pos)
            except ValueError as exc:
                problem = f"corrupt data at byte {offset + pos}: {exc}"
                break
            if item is None:
                problem = f"last {len(rest) - pos} bytes do not form a whole packet (file cut short?)"
                break
            payload, pos, is_packet = item
            if is_packet:
                stats.packets += 1
                yield payload
            if pos == len(rest):
                stats.bytes_read = offset + pos
                return


def _resync(data: bytes, damaged_at: int) -> int | None:
    """The first offset after ``damaged_at`` where a whole packet starts that is followed by another
    whole packet or by the end of ``data``; None when there is none (the rest is lost)."""
    at = data.find(_PACKET_TAG, damaged_at + 1)
    while at >= 0:
        end = _frame_end(data, at)
        if end is not None and (end == len(data) or _frame_end(data, end) is not None):
            return at
        at = data.find(_PACKET_TAG, at + 1)
    return None


def _frame_end(data: bytes, at: int) -> int | None:
    """Where the packet framed at ``at`` ends, if a packet tag starts there and it fits in ``data``."""
    if data[at : at + 1] != _PACKET_TAG:
        return None
    try:
        length = _decode_varint(data, at + 1)
    except ValueError:
        return None
    if length is None or length[1] + length[0] > len(data):
        return None
    return length[1] + length[0]


def _read_size(handle: BinaryIO, needed: int) -> int:
    """A chunk, or the whole packet a length prefix announces, but never more than the file still
    holds: a damaged prefix can announce exabytes (it is then reported as a cut-short packet)."""
    wanted = max(READ_CHUNK_BYTES, needed)
    try:
        left = os.fstat(handle.fileno()).st_size - handle.tell()
    except (OSError, AttributeError, ValueError):  # not a file: no size to bound by
        return min(wanted, _MAX_UNSIZED_READ_BYTES)
    return max(1, min(wanted, left))


def _needed(buf: bytes) -> int:
    """How many bytes the packet starting at buf[0] needs in all, when its header is readable."""
    try:
        tag = _decode_varint(buf, 0)
        if tag is None:
            return 0
        length = _decode_varint(buf, tag[1])
    except ValueError:
        return 0
    return 0 if length is None else length[1] + length[0]


def _next_packet(buf: bytes, pos: int) -> tuple[bytes, int, bool] | None:
    """(payload, next position, is a packet field) for the field at ``pos``; None if incomplete."""
    tag = _decode_varint(buf, pos)
    if tag is None:
        return None
    key, after_tag = tag
    span = _field_span(buf, pos, key & 7, after_tag)
    if span is None or span[1] > len(buf):
        return None
    start, end = span
    is_packet = key >> 3 == 1 and key & 7 == 2
    return (buf[start:end] if is_packet else b""), end, is_packet


def _field_span(buf: bytes, pos: int, wire_type: int, after_tag: int) -> tuple[int, int] | None:
    """(start, end) of a field's value; end may lie past the buffer when more bytes are needed."""
    if wire_type == 2:
        length = _decode_varint(buf, after_tag)
        return None if length is None else (length[1], length[1] + length[0])
    if wire_type == 0:
        value = _decode_varint(buf, after_tag)
        return None if value is None else (after_tag, value[1])
    width = {1: 8, 5: 4}.get(wire_type)
    if width is None:
        raise ValueError(f"unsupported wire type {wire_type} at byte {pos}")
    return after_tag, after_tag + width

"""Round trips of the packet framing: whole files, truncated tails, corrupt bytes, unknown fields."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinetoscope.format.perfetto_packets import packets
from kinetoscope.format.perfetto_packets.packets import PacketWriter, ReadStats, iter_packets
from kinetoscope.format.perfetto_packets.wire import varint


def write(path: Path, payloads: list[bytes]) -> None:
    writer = PacketWriter(path)
    for payload in payloads:
        writer.write(payload)
    writer.close()


def test_round_trip(tmp_path: Path) -> None:
    payloads = [b"", b"a", bytes(range(256)) * 3, b"x" * 70_000]
    write(tmp_path / "f.pb", payloads)
    stats = ReadStats()
    assert list(iter_packets(tmp_path / "f.pb", stats)) == payloads
    assert stats.packets == 4 and not stats.truncated
    assert stats.bytes_read == (tmp_path / "f.pb").stat().st_size


def test_packets_larger_than_the_read_chunk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packets, "READ_CHUNK_BYTES", 7)
    payloads = [b"y" * n for n in (1, 6, 7, 8, 100, 1000)]
    write(tmp_path / "f.pb", payloads)
    assert list(iter_packets(tmp_path / "f.pb")) == payloads


@pytest.mark.parametrize("cut", [1, 2, 50, 99])
def test_truncated_tail_keeps_whole_packets(tmp_path: Path, cut: int) -> None:
    payloads = [b"first", b"second", b"z" * 100]
    write(tmp_path / "f.pb", payloads)
    data = (tmp_path / "f.pb").read_bytes()
    (tmp_path / "cut.pb").write_bytes(data[:-cut])
    stats = ReadStats()
    assert list(iter_packets(tmp_path / "cut.pb", stats)) == payloads[:2]
    assert stats.truncated
    assert stats.truncated_at == len(packets.frame(b"first")) + len(packets.frame(b"second"))
    assert "cut short" in stats.problem


def test_unknown_fields_between_packets_are_skipped(tmp_path: Path) -> None:
    # field 2 varint, field 3 fixed64, field 4 bytes, field 5 fixed32: a newer writer's extras
    extra = b"\x10\x96\x01" + b"\x19" + b"\0" * 8 + b"\x22\x03abc" + b"\x2d" + b"\0" * 4
    (tmp_path / "f.pb").write_bytes(packets.frame(b"one") + extra + packets.frame(b"two"))
    stats = ReadStats()
    assert list(iter_packets(tmp_path / "f.pb", stats)) == [b"one", b"two"]
    assert not stats.truncated


def test_corrupt_bytes_stop_the_read_with_a_located_problem(tmp_path: Path) -> None:
    (tmp_path / "f.pb").write_bytes(packets.frame(b"ok") + b"\x0f\xff\xff")
    stats = ReadStats()
    assert list(iter_packets(tmp_path / "f.pb", stats)) == [b"ok"]
    assert stats.truncated and stats.truncated_at == 4
    assert "wire type" in stats.problem


def _with_bad_prefix(tmp_path: Path, payloads: list[bytes], damaged: int, prefix: bytes) -> Path:
    """A file of ``payloads`` whose packet ``damaged`` has its length prefix replaced by ``prefix``."""
    framed = [packets.frame(p) for p in payloads]
    head = packets.frame(payloads[damaged])[: 1 + len(varint(len(payloads[damaged])))]
    framed[damaged] = head[:1] + prefix + framed[damaged][len(head) :]
    (tmp_path / "f.pb").write_bytes(b"".join(framed))
    return tmp_path / "f.pb"


@pytest.mark.parametrize("prefix", [varint(10**9), varint(2**62), b"\x05", b"\x01"])
def test_a_bad_length_prefix_costs_only_its_packet(tmp_path: Path, prefix: bytes) -> None:
    payloads = [b"p%03d" % i + b"." * (i % 7) for i in range(40)]
    path = _with_bad_prefix(tmp_path, payloads, 10, prefix)
    stats = ReadStats()
    read = list(iter_packets(path, stats))
    # Every packet after the damaged one is back; at most the damaged one is lost (a shorter
    # prefix may frame a piece of it, which the decoding readers count as undecodable).
    assert read[:10] == payloads[:10]
    assert read[-29:] == payloads[11:]
    assert stats.truncated and stats.resyncs >= 1 and stats.skipped_bytes > 0
    damaged_at = sum(len(packets.frame(p)) for p in payloads[:10])
    # A prefix too long is seen at once; a shorter one frames a piece and is seen where it ends.
    assert stats.truncated_at == damaged_at if len(prefix) > 1 else damaged_at <= stats.truncated_at < damaged_at + 12


def test_overwritten_bytes_in_the_middle_are_skipped_and_counted(tmp_path: Path) -> None:
    payloads = [bytes([65 + i % 26]) * 30 for i in range(20)]
    data = bytearray(b"".join(packets.frame(p) for p in payloads))
    data[160:200] = b"\xff" * 40  # packets 5 and 6 (32 bytes each) hit
    (tmp_path / "f.pb").write_bytes(bytes(data))
    stats = ReadStats()
    read = list(iter_packets(tmp_path / "f.pb", stats))
    assert read[:5] == payloads[:5] and read[-13:] == payloads[7:]
    assert stats.truncated_at == 160 and stats.skipped_bytes >= 32
    assert "corrupt data at byte 160" in stats.problem


def test_damage_with_nothing_whole_after_it_is_a_cut(tmp_path: Path) -> None:
    (tmp_path / "f.pb").write_bytes(packets.frame(b"ok") + b"\x0a\x7f" + b"\xff" * 20)
    stats = ReadStats()
    assert list(iter_packets(tmp_path / "f.pb", stats)) == [b"ok"]
    assert stats.truncated and stats.truncated_at == 4 and stats.resyncs == 0


def test_varint_encoding_matches_protobuf() -> None:
    from google.protobuf.internal import encoder

    for value in (0, 1, 127, 128, 300, 2**32, 2**63 - 1):
        assert varint(value) == encoder._VarintBytes(value)  # type: ignore[attr-defined]


def test_flush_makes_packets_readable_before_close(tmp_path: Path) -> None:
    writer = PacketWriter(tmp_path / "f.pb")
    writer.write(b"early")
    writer.flush()
    assert list(iter_packets(tmp_path / "f.pb")) == [b"early"]
    writer.close()

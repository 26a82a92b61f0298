"""Packet files are Perfetto traces: they parse with Perfetto's own protos, whole and concatenated."""

from __future__ import annotations

from pathlib import Path

from kinetoscope.format.perfetto_packets import perfetto as pf
from kinetoscope.format.perfetto_packets.packets import PacketWriter
from kinetoscope.format.perfetto_packets.reader import read_packet_file


def header(kind: str, rank: int = 2) -> pf.FileHeader:
    return pf.FileHeader(
        file_kind=kind,
        session_id=f"h_pid_{rank}/t",
        instance_id="i-123",
        hostname="h",
        pid=77,
        rank=rank,
        local_rank=rank,
        world_size=4,
        backend="gloo",
    )


def write_counter_file(path: Path, head: pf.FileHeader, values: list[float]) -> None:
    seq = pf.Sequence.for_file(head)
    writer = PacketWriter(path)
    writer.write(pf.header_packet(head, seq).SerializeToString())
    writer.write(pf.clock_snapshot_packet(seq, pf.read_clocks_ns()).SerializeToString())
    writer.write(pf.counter_track_packet(seq, "things", "bytes").SerializeToString())
    for i, value in enumerate(values):
        writer.write(pf.counter_value_packet(seq, seq.track_uuid("things"), 1_000 + i, value).SerializeToString())
    writer.close()


def test_header_round_trip(tmp_path: Path) -> None:
    head = header("cpu_util")
    write_counter_file(tmp_path / "f.pb", head, [1.0, 2.0])
    result = read_packet_file(tmp_path / "f.pb")
    assert result.header == head
    assert result.problems == []
    values = [p.track_event.double_counter_value for p in result.packets if p.HasField("track_event")]
    assert values == [1.0, 2.0]


def test_whole_file_parses_as_a_perfetto_trace(tmp_path: Path) -> None:
    write_counter_file(tmp_path / "f.pb", header("host_mem"), [5.0])
    trace = pf.protos().Trace()
    trace.ParseFromString((tmp_path / "f.pb").read_bytes())
    assert len(trace.packet) == 4
    assert trace.packet[0].track_descriptor.process.pid == 77
    assert trace.packet[1].clock_snapshot.primary_trace_clock == pf.CLOCK_REALTIME


def test_concatenated_files_have_distinct_ids(tmp_path: Path) -> None:
    write_counter_file(tmp_path / "a.pb", header("cpu_util", rank=0), [1.0])
    write_counter_file(tmp_path / "b.pb", header("cpu_util", rank=1), [2.0])
    trace = pf.protos().Trace()
    trace.ParseFromString((tmp_path / "a.pb").read_bytes() + (tmp_path / "b.pb").read_bytes())
    sequences = {p.trusted_packet_sequence_id for p in trace.packet}
    uuids = [p.track_descriptor.uuid for p in trace.packet if p.HasField("track_descriptor")]
    assert len(sequences) == 2
    assert len(uuids) == len(set(uuids)) == 4


def test_header_keeps_unknown_labels() -> None:
    head = pf.FileHeader.from_labels([*header("x").labels(), "kinetoscope.future=1", "other=2"])
    assert head.extra == {"future": "1"}
    assert head.rank == 2 and head.world_size == 4 and head.backend == "gloo"


def test_truncated_packet_file_reports_the_cut(tmp_path: Path) -> None:
    write_counter_file(tmp_path / "f.pb", header("cpu_util"), [1.0, 2.0, 3.0])
    data = (tmp_path / "f.pb").read_bytes()
    (tmp_path / "f.pb").write_bytes(data[:-3])
    result = read_packet_file(tmp_path / "f.pb")
    assert result.header is not None
    assert [p.track_event.double_counter_value for p in result.packets if p.HasField("track_event")] == [1.0, 2.0]
    assert result.stats.truncated and "byte" in result.problems[0]

"""System/device trace events: written by hand-rolled wire encoding, read back with Perfetto's protos."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kinetoscope.format.perfetto_packets import perfetto as pf
from kinetoscope.format.perfetto_packets import wire
from kinetoscope.format.perfetto_packets.event_reader import DecodeStats, iter_events, read_tracks
from kinetoscope.format.perfetto_packets.events import EventFile
from kinetoscope.format.perfetto_packets.packets import PacketWriter

ANNOTATIONS: list[tuple[str, Any]] = [
    ("int", -5),
    ("big", 2**63 + 7),
    ("huge", 2**70),
    ("float", 0.25),
    ("text", "kérnel"),
    ("flag", True),
    ("grid", [8, 16, 5]),
    ("dims", [[1, 2], []]),
    ("empty", []),
    ("none", None),
]


def new_file(path: Path, kind: str = "device_0") -> tuple[EventFile, PacketWriter]:
    head = pf.FileHeader(
        file_kind=kind,
        session_id="h_pid_1/t",
        instance_id="h",
        hostname="h",
        pid=1,
        rank=0,
        local_rank=0,
        world_size=1,
    )
    seq = pf.Sequence.for_file(head)
    writer = PacketWriter(path)
    writer.write(pf.header_packet(head, seq).SerializeToString())
    writer.write(pf.clock_snapshot_packet(seq, {pf.CLOCK_REALTIME: 1}).SerializeToString())
    return EventFile(writer, seq), writer


def test_round_trip_of_slices_instants_counters(tmp_path: Path) -> None:
    # GIVEN a file with a slice carrying every kind of annotation, an instant and counters
    events, writer = new_file(tmp_path / "d.pb")
    stream = events.track("stream 7", "stream 7")
    events.slice(
        stream,
        1_000,
        50,
        name="k",
        category="kernel",
        annotations=ANNOTATIONS,
        correlation=2**64 - 1,
        flow_in=2**64 - 2,
    )
    events.slice(stream, 2_000, 0, name="k", category="kernel", flow_out=3)
    events.instant(events.track("mem", "memory"), 1_500, "[memory]", "cpu_instant_event", [("Bytes", -8)])
    counter = events.counter_track("alloc", "allocated bytes")
    events.counter(counter, 1_500, 4096)
    events.counter(counter, 1_600, 0.5)
    events.flush()
    writer.close()
    # WHEN it is read back
    stats = DecodeStats()
    got = list(iter_events(tmp_path / "d.pb", stats))
    # THEN every value comes back as written
    first, second, instant, c1, c2 = got
    assert (first.kind, first.track.name, first.ts_ns, first.dur_ns, first.name) == (
        "slice",
        "stream 7",
        1_000,
        50,
        "k",
    )
    assert first.category == "kernel" and first.correlation_id == 2**64 - 1
    assert first.terminating_flow_ids == (2**64 - 2,) and first.flow_ids == ()
    expected = dict(ANNOTATIONS)
    expected["huge"] = str(2**70)
    expected["empty"] = []
    assert first.annotations == expected
    assert (second.dur_ns, second.flow_ids, second.annotations) == (0, (3,), {})
    assert (instant.kind, instant.track.name, instant.annotations) == ("instant", "memory", {"Bytes": -8})
    assert (c1.value, c2.value, c1.track.is_counter) == (4096, 0.5, True)
    assert stats.unfinished_slices == stats.unmatched_ends == stats.unknown_tracks == 0


def test_file_is_a_perfetto_trace_with_interned_names(tmp_path: Path) -> None:
    events, writer = new_file(tmp_path / "d.pb")
    track = events.track("t", "t")
    for ts in range(5):
        events.slice(track, ts * 10, 5, name="same kernel name", category="kernel")
    events.flush()
    writer.close()
    trace = pf.protos().Trace()
    trace.ParseFromString((tmp_path / "d.pb").read_bytes())
    names = [n.name for p in trace.packet for n in p.interned_data.event_names]
    assert names == ["same kernel name"]  # interned once
    assert sum(p.HasField("track_event") for p in trace.packet) == 10
    assert read_tracks(tmp_path / "d.pb")[track].name == "t"


def test_truncated_file_reads_its_whole_packets(tmp_path: Path) -> None:
    events, writer = new_file(tmp_path / "d.pb")
    track = events.track("t", "t")
    for ts in range(100):
        events.slice(track, ts * 10, 5, name=f"k{ts}", category="kernel")
    events.flush()
    writer.close()
    data = (tmp_path / "d.pb").read_bytes()
    (tmp_path / "cut.pb").write_bytes(data[: len(data) - 7])
    stats = DecodeStats()
    got = list(iter_events(tmp_path / "cut.pb", stats))
    assert 90 < len(got) < 100
    assert [e.name for e in got] == [f"k{i}" for i in range(len(got))]
    assert stats.read.truncated


def test_varint_matches_the_slow_reference() -> None:
    for value in [0, 1, 127, 128, 16383, 16384, 2**28 - 1, 2**28, 2**35 + 3, 1_790_857_026_123_456_789, 2**64 - 1]:
        assert wire.varint(value) == wire.slow_varint(value)

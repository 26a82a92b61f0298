"""Counter samples from packet files: what cannot be read is counted, never dropped silently."""

from __future__ import annotations

from pathlib import Path

from kinetoscope.format.perfetto_packets.packets import frame
from kinetoscope.format.perfetto_packets.reader import read_packet_file
from kinetoscope.format.problems import ProblemLog
from kinetoscope.ingest.rows.samples import UNDECODABLE, counter_rows

from ...format.perfetto_packets.test_perfetto_files import header, write_counter_file


def test_undecodable_packets_are_counted_and_the_rest_kept(tmp_path: Path) -> None:
    # GIVEN a sample file whose last packet is framed but is not a TracePacket
    path = tmp_path / "host_mem.pb"
    write_counter_file(path, header("host_mem"), [1.0, 2.0])
    data = path.read_bytes()
    path.write_bytes(data + frame(b"\xff\xff\xff"))
    # WHEN its samples are read
    problems = ProblemLog()
    rows = counter_rows(path, problems)
    # THEN the good samples are kept and the bad packet is reported with the file
    assert [value for _, _, value, _, _ in rows] == [1.0, 2.0]
    assert problems.counts() == {UNDECODABLE: 1}
    assert problems.records[0].file == "host_mem.pb"
    assert read_packet_file(path).undecodable == 1

"""Counter rows from a session's sample files (``cpu_util.pb``, ``host_mem.pb``).

Each file is a Perfetto packet stream: counter tracks are described once (name, unit), then
every sample is a ``TYPE_COUNTER`` track event on one of them. Files are streamed, so their
size does not matter; a file cut short is read to its last whole packet and the cut is
recorded as a problem.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kinetoscope.format.problems import ProblemLog
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.ingest.rows.batch import CounterRow
from kinetoscope.model.scalars import NO_ID

SAMPLE_FILES = (layout.CPU_UTIL, layout.HOST_MEMORY)
TRUNCATED = "truncated"
UNDECODABLE = "undecodable_packets"
OUT_OF_RANGE = "out_of_range"
_MAX_TS_NS = (1 << 63) - 1  # the dataset's ts_ns is a signed 64-bit integer


def sample_files(session: Path) -> list[Path]:
    """The sample files present, finished ones first, else their ``.partial`` form."""
    found = []
    for name in SAMPLE_FILES:
        for candidate in (session / name, session / layout.partial_name(name)):
            if candidate.exists():
                found.append(candidate)
                break
    return found


def _unit(descriptor: Any) -> str:
    from kinetoscope.format.perfetto_packets.perfetto import protos

    counter = descriptor.counter
    if counter.unit == protos().CounterDescriptor.UNIT_SIZE_BYTES:
        return "bytes"
    return counter.unit_name or ""


def counter_rows(path: Path, problems: ProblemLog) -> list[CounterRow]:
    """Every counter sample of one packet file, as ``(name, ts_ns, value, unit, device)``."""
    # Imported here: most sessions ingested have no sample files, and the packet reader's
    # imports would cost every ingest.
    from kinetoscope.format.perfetto_packets.packets import ReadStats
    from kinetoscope.format.perfetto_packets.perfetto import protos, text
    from kinetoscope.format.perfetto_packets.reader import iter_trace_packets

    tracks: dict[int, tuple[str, str]] = {}
    rows: list[CounterRow] = []
    stats = ReadStats()
    counter_type = protos().TrackEvent.TYPE_COUNTER
    out_of_range = 0
    for packet in iter_trace_packets(path, stats):
        if packet.HasField("track_descriptor") and packet.track_descriptor.HasField("counter"):
            desc = packet.track_descriptor
            tracks[desc.uuid] = (text(desc.name), text(_unit(desc)))
        elif packet.HasField("track_event") and packet.track_event.type == counter_type:
            event = packet.track_event
            name, unit = tracks.get(event.track_uuid, (f"track {event.track_uuid}", ""))
            value = event.double_counter_value if event.HasField("double_counter_value") else float(event.counter_value)
            if packet.timestamp > _MAX_TS_NS:
                out_of_range += 1
                continue
            rows.append((name, packet.timestamp, value, unit, NO_ID))
    if out_of_range:
        message = f"{out_of_range} sample(s) with a timestamp past 2^63 ns were skipped; {len(rows)} samples kept"
        problems.add(path.name, "packets", OUT_OF_RANGE, message)
    if stats.truncated:
        problems.add(path.name, f"byte {stats.truncated_at}", TRUNCATED, f"{stats.damage}; {len(rows)} samples kept")
    if stats.undecodable:
        message = f"{stats.undecodable} packet(s) framed but not decodable were skipped; {len(rows)} samples kept"
        problems.add(path.name, "packets", UNDECODABLE, message)
    return rows

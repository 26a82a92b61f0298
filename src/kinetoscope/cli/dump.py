"""Print a session file as readable text, packet by packet (or, with --events, event by event).

Reads trace_info.pb (session metadata), the packet files (ntrace.pb, device_<N>.pb,
cpu_util.pb, host_mem.pb, and their .partial forms left by an interrupted run),
trace.json (one event per line) and memory snapshots (*.pickle: a summary, then one
trace entry per line; read as plain data only, never run). A truncated or corrupt file is read up to its last
whole packet (trace.json: every event that can be read) and the loss is reported; the exit code is then 1.
--events prints a packet file's slices, instants and counters decoded (track, start, duration, name,
category, correlation, flows, annotations) instead of its raw packets.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from google.protobuf import text_format

from kinetoscope._errors import CommandError, FormatError
from kinetoscope.format.kineto.kineto_json import check_trace, iter_trace_events, read_trace_metadata
from kinetoscope.format.perfetto_packets.event_reader import DecodedEvent, DecodeStats, iter_events
from kinetoscope.format.perfetto_packets.reader import read_packet_file
from kinetoscope.format.problems import ProblemLog
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti
from kinetoscope.format.session_files.snapshot import load_snapshot, summarize


@dataclass(frozen=True)
class DumpOptions:
    path: Path
    limit: int | None
    events: bool = False


class DumpCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("file", type=Path, help="a session file, or a session directory to list")
        parser.add_argument("--limit", type=int, default=None, help="print at most this many packets/events")
        parser.add_argument("--events", action="store_true", help="a packet file's events decoded, not its packets")

    def run(self, args: argparse.Namespace) -> int:
        options = DumpOptions(path=args.file, limit=args.limit, events=args.events)
        return dump(options, sys.stdout)


def dump(options: DumpOptions, out: TextIO) -> int:
    path = options.path
    if not path.exists():
        raise CommandError(f"{path}: no such file or directory", exit_code=2)
    if path.is_dir():
        return _dump_dir(path, out)
    name = path.name.removesuffix(layout.PARTIAL_SUFFIX)
    if name == layout.TRACE_INFO:
        return _dump_trace_info(path, out)
    if name.endswith(".json") or name.endswith(".json.gz"):
        return _dump_json(path, options.limit, out)
    if name.endswith(layout.SNAPSHOT_SUFFIX):
        return _dump_snapshot(path, options.limit, out)
    if options.events:
        return _dump_events(path, options.limit, out)
    return _dump_packets(path, options.limit, out)


def _event_line(event: DecodedEvent) -> str:
    if event.kind == "counter":
        return f"counter {event.track.name!r} ts={event.ts_ns} value={event.value}"
    fields = [event.kind, repr(event.track.name), f"ts={event.ts_ns}"]
    if event.kind == "slice":
        fields.append(f"dur={event.dur_ns}")
    fields += [repr(event.name), f"cat={event.category!r}"]
    if event.correlation_id is not None:
        fields.append(f"correlation={event.correlation_id}")
    if event.flow_ids or event.terminating_flow_ids:
        fields.append(f"flows={list(event.flow_ids)}->{list(event.terminating_flow_ids)}")
    if event.annotations:
        fields.append(json.dumps(event.annotations, sort_keys=True, default=str))
    return " ".join(fields)


def _dump_events(path: Path, limit: int | None, out: TextIO) -> int:
    """Slices (printed when they end), instants and counters, with their track's name."""
    stats = DecodeStats()
    out.write(f"# {path}: events\n")
    for index, event in enumerate(iter_events(path, stats)):
        if limit is not None and index >= limit:
            out.write("# ... (--limit reached)\n")
            return 0
        out.write(f"{_event_line(event)}\n")
    lost = _decode_problems(stats)
    for problem in lost:
        out.write(f"# PROBLEM: {problem}\n")
    return 1 if lost else 0


def _decode_problems(stats: DecodeStats) -> list[str]:
    found = [f"byte {stats.read.truncated_at}: {stats.read.damage}"] if stats.read.truncated else []
    found += [f"{stats.read.undecodable} packet(s) did not decode"] if stats.read.undecodable else []
    found += [f"{stats.unfinished_slices} slice(s) begun but never ended"] if stats.unfinished_slices else []
    found += [f"{stats.unmatched_ends} slice end(s) without a begin"] if stats.unmatched_ends else []
    return found


def _dump_dir(path: Path, out: TextIO) -> int:
    status = 0
    for child in sorted(path.iterdir()):
        if child.is_file():
            out.write(f"{child.name}\t{child.stat().st_size} bytes\n")
    if (path / layout.TRACE_INFO).exists():
        out.write("\n")
        status = _dump_trace_info(path / layout.TRACE_INFO, out)
    else:
        _list_sessions_below(path, out)
    return status


def _list_sessions_below(path: Path, out: TextIO) -> None:
    sessions = [s for s in layout.find_sessions(path) if s != path]
    if not sessions:
        out.write(f"# {path}: not a session directory (no {layout.TRACE_INFO}) and no session below it\n")
        return
    out.write(f"# {path}: not a session directory; {len(sessions)} session(s) below it:\n")
    for session in sessions:
        out.write(f"{session.relative_to(path).as_posix()}/\n")


def _dump_trace_info(path: Path, out: TextIO) -> int:
    try:
        info = ti.read_trace_info(path)
    except FormatError as exc:  # a corrupt file: exit 1, as for every other damaged file
        raise CommandError(str(exc), exit_code=1) from exc
    out.write(f"# {path}: kinetoscope.v1.TraceInfo, state {ti.state_name(info.state)}\n")
    out.write(text_format.MessageToString(info))
    if info.state != ti.SessionState.SESSION_STATE_COMPLETE:
        out.write(f"# INCOMPLETE SESSION: state {ti.state_name(info.state)}")
        out.write(f" ({info.error})\n" if info.error else " (the process stopped before export finished)\n")
        return 1
    return 0


def _dump_packets(path: Path, limit: int | None, out: TextIO) -> int:
    result = read_packet_file(path)
    header = result.header
    kind = header.file_kind if header else "unknown"
    out.write(f"# {path}: {len(result.packets)} packet(s), file kind {kind}\n")
    for index, packet in enumerate(result.packets):
        if limit is not None and index >= limit:
            out.write(f"# ... {len(result.packets) - limit} more packet(s)\n")
            break
        out.write(f"[{index}] {text_format.MessageToString(packet, as_one_line=True)}\n")
    for problem in result.problems:
        out.write(f"# PROBLEM: {problem}\n")
    if path.name.endswith(layout.PARTIAL_SUFFIX):
        out.write("# PARTIAL FILE: the writing process did not finish it (killed or still running)\n")
    return 1 if result.problems else 0


def _dump_json(path: Path, limit: int | None, out: TextIO) -> int:
    """Events one per line, streamed: a truncated or damaged trace prints what can be read."""
    try:
        check_trace(path)
        meta = read_trace_metadata(path)
    except (OSError, FormatError) as exc:
        raise CommandError(str(exc), exit_code=1) from exc  # names the file
    out.write(f"# {path}: {json.dumps(meta, sort_keys=True)}\n")
    problems = ProblemLog()
    total = 0
    for batch in iter_trace_events(path, problems):
        for index, event in batch:
            if limit is None or total < limit:
                out.write(f"[{index}] {json.dumps(event, sort_keys=True)}\n")
            total += 1
    if limit is not None and total > limit:
        out.write(f"# ... {total - limit} more event(s)\n")
    out.write(f"# {total} event(s)\n")
    for line in problems.summary_lines():
        out.write(f"# PROBLEM: {line}\n")
    return 1 if problems else 0


def _dump_snapshot(path: Path, limit: int | None, out: TextIO) -> int:
    try:
        snapshot = load_snapshot(path)
    except FormatError as exc:
        raise CommandError(str(exc), exit_code=1) from exc
    summary = summarize(snapshot)
    source = summary.metadata.get("source", "unknown source")
    out.write(f"# {path}: memory snapshot from {source}, {summary.segments} segment(s)\n")
    out.write(json.dumps(dataclasses.asdict(summary), sort_keys=True) + "\n")
    entries = [entry for trace in snapshot.get("device_traces", []) for entry in trace]
    for index, entry in enumerate(entries):
        if limit is not None and index >= limit:
            out.write(f"# ... {len(entries) - limit} more entries\n")
            break
        out.write(f"[{index}] {json.dumps(entry, sort_keys=True)}\n")
    return 0


command = DumpCommand()

"""What an import needs to know of a trace before its events are converted: the profiling window
(Kineto's ``Trace`` spans), the host process and, without a window, the first events' start.

The facts are foreseen from the trace's head and tail blocks (Kineto writes the spans and the
process names after the activities, near the end of the event array) and noted again, from
every event, while the conversion reads them. The conversion holds when both agree; where an
event the blocks did not show changes them, the import converts again with what it noted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kinetoscope._byte_search import find
from kinetoscope.format.kineto import kineto_json
from kinetoscope.format.kineto.trace_records import ParsedRecord, TraceRecord, codec
from kinetoscope.format.problems import ProblemLog
from kinetoscope.model import kinds
from kinetoscope.model.scalars import UINT32_LIMIT, is_timestamp_us

# The events that hold the facts, picked out of a trace's tail by this pattern.
FACTS_RE = re.compile(rb'"cat"\s*:\s*"Trace"|"name"\s*:\s*"process_name"')
# The values it names, searched for literally, and the pattern checked where one is found.
_FACT_VALUES = (b'"Trace"', b'"process_name"')
_LOOKBEHIND_BYTES = 256  # room for the key and the blanks before a value
SCAN_BLOCK_BYTES = 4 << 20  # read at a time by the selective scan
# Kept before a window's first match: the look-behind of its pattern and of its event's start.
_KEPT_BYTES = kineto_json.MAX_PICKED_EVENT_BYTES + _LOOKBEHIND_BYTES
# Categories of rows recorded on a device (their pid is the device index, not the host's).
_DEVICE_CATEGORIES = frozenset(c for c, (layer, _) in kinds.CATEGORIES.items() if layer == kinds.DEVICE)
_DEVICE_PROCESS_RE = re.compile(r"^(GPU|Device|MTIA|XPU|HPU|Spans|Traces)\b", re.IGNORECASE)

Batch = list[tuple[int, TraceRecord]]


@dataclass
class TraceFacts:
    """The profiling window and the host process of a trace."""

    window_us: tuple[float, float] | None = None
    pid: int | None = None
    first_ts_us: float | None = None  # earliest start among the first events, where there is no window


class FactNotes:
    """Facts noted from a trace's events in file order, as a pass over all of them reads them."""

    def __init__(self) -> None:
        self.facts = TraceFacts()
        self._codec = codec()

    def noting(self, batches: Iterable[Batch]) -> Iterator[Batch]:
        """``batches`` as they are, noting the facts in each on the way."""
        for batch in batches:
            self.note(batch)
            yield batch

    def note(self, batch: Batch) -> None:
        wanted = [record for _, record in batch if record.cat == "Trace" or record.name == "process_name"]
        if not wanted:
            return
        for record, args in zip(wanted, self._codec.args(wanted), strict=True):
            note_fact(self.facts, record, args)

    def completed(self, ends: kineto_json.TraceEnds) -> TraceFacts:
        """The facts noted, completed from the first events where the trace lacks a window or a host."""
        return completed(TraceFacts(self.facts.window_us, self.facts.pid), ends.first_values)


def foreseen(ends: kineto_json.TraceEnds) -> TraceFacts:
    """The facts as the head and tail blocks of a trace show them (``kineto_json.read_ends`` with ``FACTS_RE``)."""
    facts = TraceFacts()
    for event in (*ends.first_values, *ends.last_events):
        if isinstance(event, dict):
            note_event(facts, event)
    return completed(facts, ends.first_values)


def scan_selected(trace: Path, ends: kineto_json.TraceEnds, hasher: Any = None) -> TraceFacts:
    """The facts of a whole uncompressed trace, parsing only the events that hold them: what a
    full pass notes, for an import that converts nothing. ``hasher`` is fed the file's bytes.

    The file is read a block at a time (``SCAN_BLOCK_BYTES``) into a ``FactScan``: mapped whole,
    every page of the file counted in the process's resident memory until the scan ended (the
    size of the trace, 54 MB for HTA's df_index_resolver, above what the rest of the import holds)."""
    scan = FactScan()
    with open(trace, "rb") as handle:
        while True:
            block = handle.read(SCAN_BLOCK_BYTES)
            if hasher is not None:
                hasher.update(block)
            scan.feed(block)
            if not block:
                return scan.completed(ends)


class FactScan:
    """The facts of a trace's bytes, fed in file order a block at a time (b"": the end), parsing
    only the events that hold them: ``scan_selected`` feeds it a file's blocks, and a copy being
    written the blocks it writes (``SCAN_BLOCK_BYTES`` each, the same blocks, so the same picks),
    which then need no second read.

    Each block is searched with the end of the one before (``_KEPT_BYTES``: room for a picked
    event around a match). The events around each match of ``FACTS_RE`` are found by their
    literal values (a byte search, much faster than the pattern over the whole trace), in file
    order. A match is taken in the first window that holds ``MAX_PICKED_EVENT_BYTES`` after its
    end (or the trace's end), and the window keeps ``_KEPT_BYTES`` before it, so each pick reads
    the bytes a pick in the whole file reads. (An event with two matches taken in two windows is
    noted twice, which changes no fact: a span widens the window to itself again, a process is
    taken first or not.)
    """

    def __init__(self) -> None:
        self.facts = TraceFacts()
        self._window = b""  # the bytes searched: the end of the blocks before
        self._base = 0  # the trace offset of window[0]
        self._done = 0  # matches taken up to this offset

    def feed(self, block: bytes) -> None:
        """Note the facts the trace's next ``block`` completes (b"": the trace ends)."""
        self._window += block
        upto = self._base + len(self._window) - (kineto_json.MAX_PICKED_EVENT_BYTES if block else 0)
        if upto > self._done:
            matches = _fact_matches(self._window, self._done - self._base, upto - self._base)
            for event in kineto_json.picked_events(self._window, matches, errors="replace"):
                note_event(self.facts, event)
            self._done = upto
        if block:
            cut = max(0, self._done - self._base - _KEPT_BYTES)
            self._window, self._base = self._window[cut:], self._base + cut

    def completed(self, ends: kineto_json.TraceEnds) -> TraceFacts:
        """The facts of the whole trace (fed to its end), completed from its first events (``completed``)."""
        return completed(self.facts, ends.first_values)


def _fact_matches(data: bytes, after: int = 0, upto: int | None = None) -> Iterator[re.Match[bytes]]:
    """Matches of ``FACTS_RE`` whose end is in ``data[after + 1 : upto + 1]``, in order."""
    upto = len(data) if upto is None else upto
    ends = sorted(
        end
        for needle in _FACT_VALUES
        for at in _occurrences(data, needle, max(0, after - len(needle) + 1))
        if after < (end := at + len(needle)) <= upto
    )
    for end in ends:
        matches = FACTS_RE.finditer(data, max(0, end - _LOOKBEHIND_BYTES), end)
        match = next((m for m in matches if m.end() == end), None)
        if match is not None:
            yield match


def _occurrences(data: bytes, needle: bytes, start: int = 0) -> Iterator[int]:
    at = find(data, needle, start)
    while at >= 0:
        yield at
        at = find(data, needle, at + 1)


def scan_facts(trace: Path) -> TraceFacts:
    """The facts of a whole trace, read as an import's conversion reads them."""
    notes = FactNotes()
    for batch in kineto_json.iter_trace_records(trace, ProblemLog()):
        notes.note(batch)
    return notes.completed(kineto_json.read_head_values(trace))


def note_event(facts: TraceFacts, event: dict[str, Any]) -> None:
    note_fact(facts, ParsedRecord(event), event.get("args"))


def note_fact(facts: TraceFacts, record: TraceRecord, args: Any) -> None:
    """Widen the window by a ``Trace`` span; take the first host process named (``args``: the record's, decoded)."""
    if record.cat == "Trace" and record.ph == "X":
        ts, dur = record.ts, record.dur
        if is_timestamp_us(ts) and is_timestamp_us(dur) and dur >= 0 and is_timestamp_us(ts + dur):
            start, end = (ts, ts + dur) if facts.window_us is None else facts.window_us
            facts.window_us = (min(start, ts), max(end, ts + dur))
    elif record.name == "process_name" and facts.pid is None:
        label = args.get("name") if isinstance(args, dict) else None
        pid = record.pid
        host = isinstance(label, str) and not _DEVICE_PROCESS_RE.match(label)
        if type(pid) is int and 0 <= pid < UINT32_LIMIT and host:
            facts.pid = pid


def completed(facts: TraceFacts, first_values: list[Any]) -> TraceFacts:
    """A trace without process metadata or profiler span: the host pid and the start from its first
    events (the first slice whose pid is a number, the earliest start among them)."""
    if facts.pid is not None and facts.window_us is not None:
        return facts
    slices = [e for e in first_values if isinstance(e, dict) and e.get("ph") == "X" and is_timestamp_us(e.get("ts"))]
    if facts.pid is None:
        host = (e.get("pid") for e in slices if e.get("cat") not in _DEVICE_CATEGORIES)
        facts.pid = next((pid for pid in host if type(pid) is int and 0 <= pid < UINT32_LIMIT), None)
    if slices and facts.window_us is None:
        facts.first_ts_us = min(float(e["ts"]) for e in slices)
    return facts

"""Kineto events -> the system trace (``ntrace.pb``) and per-device traces (``device_<N>.pb``).

Shared by capture (converting the ``trace.json`` torch just wrote) and ``kinetoscope import``
(converting traces recorded elsewhere). Events arrive in batches of ``(position, event)``;
the converter classifies each one (``kineto_events``), writes runtime calls, collectives,
synchronizations and allocator events into the system trace and device executions into
their device's file, links them with flows, and counts everything it skipped, filtered or
dropped.

Flows: a runtime call and the device execution it caused share Kineto's correlation id;
both get the flow id derived from it (``flow_ids`` on the call, ``terminating_flow_ids``
on the execution). Events without a correlation id are linked by Kineto's own flow events
(``ac2g``, ``async``...), which follow the event they bind to.

Caps: with ``max_events_per_device`` set, a first pass counts each device's executions
and remembers the newest timestamps (memory bounded by the cap); if a device went over,
a second pass writes only the newest ``max_events_per_device`` of it.
"""

from __future__ import annotations

import dataclasses
import heapq
import os
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kinetoscope.format import kineto_events as ke
from kinetoscope.format import session_dir as layout
from kinetoscope.format.events import EventFile, Lanes
from kinetoscope.format.files import discard
from kinetoscope.format.packets import PacketWriter
from kinetoscope.format.perfetto import FileHeader, Sequence, clock_snapshot_packet, header_packet, stable_id
from kinetoscope.format.problems import ProblemLog

Batch = list[tuple[int, dict[str, Any]]]
_MASK64 = (1 << 64) - 1
_GOLDEN64 = 0x9E3779B97F4A7C15
_LOOKBACK_EVENTS = 64


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


@dataclass(frozen=True)
class ConvertOptions:
    """What to convert and how.

    - ``base_ns``: added to Kineto's timestamps (its ``baseTimeNanoseconds``; 0 for old traces
      whose timestamps are already epoch microseconds).
    - ``session_id``: salts flow ids, so the files of different sessions can be merged.
    - ``device_enabled``: devices whose events are kept (None: all).
    - ``max_events_per_device``: keep only the newest this many executions per device (None: all).
    - ``expected_devices``: devices whose file is written even when they ran nothing.
    - ``window_ns``: the profiling window; events wholly outside it are skipped and counted.
    """

    base_ns: int
    session_id: str
    write_runtime: bool = True
    write_device: bool = True
    device_enabled: Callable[[int], bool] | None = None
    max_events_per_device: int | None = None
    expected_devices: tuple[int, ...] = ()
    window_ns: tuple[int, int] | None = None


@dataclass
class ConversionStats:
    """Counts of one conversion: what was written, linked, filtered, dropped and skipped."""

    runtime_events: int = 0
    device_events: int = 0
    allocator_events: int = 0
    framework_events: int = 0
    filtered_events: int = 0
    device_totals: Counter[int] = field(default_factory=Counter)
    device_kept: Counter[int] = field(default_factory=Counter)
    skipped: Counter[str] = field(default_factory=Counter)
    files: list[str] = field(default_factory=list)

    def drops(self) -> dict[int, tuple[int, int]]:
        """Device -> (kept, total) for each device that lost executions to the cap."""
        return {
            device: (self.device_kept[device], total)
            for device, total in sorted(self.device_totals.items())
            if self.device_kept[device] < total
        }


class NewestKeeper:
    """Remembers the newest ``cap`` start times per device to find what a cap keeps."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.heaps: dict[int, list[int]] = {}
        self.totals: Counter[int] = Counter()

    def observe(self, device: int, ts_ns: int) -> None:
        self.totals[device] += 1
        heap = self.heaps.setdefault(device, [])
        if len(heap) < self.cap:
            heapq.heappush(heap, ts_ns)
        elif ts_ns > heap[0]:
            heapq.heapreplace(heap, ts_ns)

    def cutoffs(self) -> dict[int, tuple[int, int]]:
        """Device -> (oldest kept start, how many executions starting exactly then are kept)."""
        found = {}
        for device, heap in self.heaps.items():
            if self.totals[device] > self.cap:
                oldest = heap[0]
                found[device] = (oldest, sum(1 for ts in heap if ts == oldest))
        return found


class _Cutoff:
    """Second-pass filter: keeps executions at or after each capped device's cutoff."""

    def __init__(self, cutoffs: dict[int, tuple[int, int]]) -> None:
        self.cutoffs = cutoffs
        self.ties_left = {device: ties for device, (_, ties) in cutoffs.items()}

    def keeps(self, device: int, ts_ns: int) -> bool:
        found = self.cutoffs.get(device)
        if found is None or ts_ns > found[0]:
            return True
        if ts_ns == found[0] and self.ties_left[device] > 0:
            self.ties_left[device] -= 1
            return True
        return False


class TraceConverter:
    """One pass over a trace's events, writing the system and device traces of a session."""

    def __init__(
        self,
        files: PacketFiles,
        options: ConvertOptions,
        problems: ProblemLog,
        file_label: str,
        *,
        where: Callable[[int], str] = lambda position: f"event {position}",
        cutoff: _Cutoff | None = None,
    ) -> None:
        self.files = files
        self.options = options
        self.problems = problems
        self.file_label = file_label
        self.where = where
        self.cutoff = cutoff
        capped = options.max_events_per_device and cutoff is None
        self.keeper = NewestKeeper(options.max_events_per_device or 0) if capped else None
        self.stats = ConversionStats()
        self.flow_salt = stable_id(options.session_id, "flows", bits=64)
        self.runtime: EventFile | None = None
        self.devices: dict[int, EventFile] = {}
        self._writers: dict[EventFile, PacketWriter] = {}
        self.lanes: dict[tuple[int, str], Lanes] = {}
        self.pending: deque[ke.Execution] = deque()
        self.pending_by_key: dict[tuple[Any, Any, Any], ke.Execution] = {}
        self.collectives: list[ke.Execution] = []
        self.callers: list[tuple[int, str, Any]] = []
        self._open_initial_files()

    # -- files --------------------------------------------------------------------------------
    def _open_initial_files(self) -> None:
        if self.options.write_runtime:
            self.runtime = self._open(layout.SYSTEM_TRACE, "system_trace")
        if self.options.write_device:
            for device in self.options.expected_devices:
                self._device_file(device)

    def _open(self, name: str, file_kind: str) -> EventFile:
        writer, seq = self.files.open(name, file_kind)
        events = EventFile(writer, seq)
        self._writers[events] = writer
        self.stats.files.append(name)
        return events

    def _device_file(self, device: int) -> EventFile:
        found = self.devices.get(device)
        if found is None:
            name = layout.device_trace_name(device)
            found = self.devices[device] = self._open(name, name.removesuffix(".pb"))
        return found

    # -- events -------------------------------------------------------------------------------
    def add_batch(self, batch: Batch) -> None:
        for position, event in batch:
            self._add(position, event)

    def _add(self, position: int, event: dict[str, Any]) -> None:
        if event.get("ph") in ("s", "f", "t"):
            self._flow_event(event)
            return
        found = ke.layer_kind(event)
        if found is None:
            self._not_converted(position, event)
            return
        try:
            execution = ke.normalise(event, found[0], found[1], position, self.options.base_ns)
        except ke.Skip as skip:
            self._skip(position, skip.kind, str(skip))
            return
        if self._admits(execution):
            self._push(execution)

    def _not_converted(self, position: int, event: dict[str, Any]) -> None:
        name = event.get("name")
        if ke.is_unknown_category(event):
            self._skip(position, "unknown_category", f"unknown category {event.get('cat')!r}; left in trace.json only")
        elif event.get("ph") == "X" and isinstance(name, str) and name.startswith(ke.CALLER_PREFIX):
            self._note_caller(event, name)
        if event.get("ph") != "M":
            self.stats.framework_events += 1

    def _note_caller(self, event: dict[str, Any], name: str) -> None:
        args = event.get("args")
        external = args.get("External id") if isinstance(args, dict) else None
        try:
            ts_ns = ke.to_ns(event.get("ts"), self.options.base_ns)
        except ke.Skip:
            return
        self.callers.append((ts_ns, ke.collective_op(name), external))

    def _skip(self, position: int, kind: str, message: str) -> None:
        self.stats.skipped[kind] += 1
        self.problems.add(self.file_label, self.where(position), kind, message)

    def _admits(self, execution: ke.Execution) -> bool:
        window = self.options.window_ns
        end_ns = execution.ts_ns + execution.dur_ns
        if window is not None and (end_ns < window[0] or execution.ts_ns > window[1]):
            self._skip(execution.position, "outside_window", "event lies wholly outside the profiling window")
            return False
        enabled = self.options.device_enabled
        if enabled is not None and execution.device >= 0 and not enabled(execution.device):
            self.stats.filtered_events += 1
            return False
        if execution.layer == ke.DEVICE:
            return self._device_admits(execution)
        return self.options.write_runtime

    def _device_admits(self, execution: ke.Execution) -> bool:
        if not self.options.write_device:
            return False
        if self.keeper is not None:
            self.keeper.observe(execution.device, execution.ts_ns)
        self.stats.device_totals[execution.device] += 1
        if self.cutoff is not None and not self.cutoff.keeps(execution.device, execution.ts_ns):
            return False
        self.stats.device_kept[execution.device] += 1
        return True

    def _push(self, execution: ke.Execution) -> None:
        if execution.correlation is not None:
            flow = self.flow_id(execution.correlation)
            if execution.layer == ke.DEVICE or execution.kind == "sync":
                execution.flow_in = flow
            elif execution.kind in ("runtime", "driver"):
                execution.flow_out = flow
        if execution.kind == "collective" and execution.name != ke.COMMS_METADATA_OP:
            self.collectives.append(execution)
            return
        self.pending.append(execution)
        self.pending_by_key[execution.raw_key] = execution
        if len(self.pending) > _LOOKBACK_EVENTS:
            self._write(self._pop_pending())

    def _pop_pending(self) -> ke.Execution:
        execution = self.pending.popleft()
        if self.pending_by_key.get(execution.raw_key) is execution:
            del self.pending_by_key[execution.raw_key]
        return execution

    def _flow_event(self, event: dict[str, Any]) -> None:
        if event.get("cat") not in ke.LAUNCH_FLOW_CATEGORIES:
            return
        flow_id = ke.as_int(event.get("id"))
        target = self.pending_by_key.get((event.get("pid"), event.get("tid"), event.get("ts")))
        if flow_id is None or target is None:
            return
        flow = self.flow_id(flow_id)
        if event.get("ph") == "s" and target.flow_out is None and target.flow_in != flow:
            target.flow_out = flow
        elif event.get("ph") == "f" and target.flow_in is None:
            # The flow event says where the flow ends, even on a runtime call that shares its id.
            target.flow_in = flow
            if target.flow_out == flow:
                target.flow_out = None

    def flow_id(self, correlation: int) -> int:
        """The session-unique flow id of a correlation id."""
        flow = (((correlation & _MASK64) * _GOLDEN64) & _MASK64) ^ self.flow_salt
        return flow or 1

    # -- writing ------------------------------------------------------------------------------
    def _write(self, execution: ke.Execution) -> None:
        if execution.layer == ke.DEVICE:
            self._write_device(execution)
        elif execution.kind == "allocation":
            self._write_allocation(execution)
        else:
            self._write_runtime(execution)

    def _write_device(self, execution: ke.Execution) -> None:
        out = self._device_file(execution.device)
        base = f"stream {execution.stream}"
        if execution.kind == "annotation":
            base += " · annotations"
        track = self._lane_track(out, execution.device, base, execution, parent=None)
        self._slice(out, track, execution)
        self.stats.device_events += 1

    def _write_runtime(self, execution: ke.Execution) -> None:
        out = self.runtime
        if out is None:
            return
        if execution.kind == "sync":
            group = out.track(f"device {execution.device}", f"device {execution.device}", rank=1)
            base = f"device {execution.device} · synchronization"
        else:
            group = out.track(f"thread {execution.thread}", f"thread {execution.thread}", rank=0)
            base = f"thread {execution.thread} · {'collectives' if execution.kind == 'collective' else execution.kind}"
        track = self._lane_track(out, -2, base, execution, parent=group)
        self._slice(out, track, execution)
        self.stats.runtime_events += 1

    def _lane_track(self, out: EventFile, scope: int, base: str, execution: ke.Execution, parent: int | None) -> int:
        lanes = self.lanes.setdefault((scope, base), Lanes())
        lane = lanes.place(execution.ts_ns, execution.ts_ns + execution.dur_ns)
        name = base if lane == 0 else f"{base} · lane {lane + 1}"
        return out.track(name, name, parent=parent, rank=lane)

    def _slice(self, out: EventFile, track: int, execution: ke.Execution) -> None:
        out.slice(
            track,
            execution.ts_ns,
            execution.dur_ns,
            name=execution.name,
            category=execution.category,
            annotations=list(execution.args.items()),
            correlation=execution.correlation,
            flow_out=execution.flow_out,
            flow_in=execution.flow_in,
        )

    def _write_allocation(self, execution: ke.Execution) -> None:
        out = self.runtime
        if out is None:
            return
        label = ke.memory_label(execution.args)
        group = out.track("memory", "memory", rank=2)
        track = out.track(f"memory · {label}", f"{label} allocator", parent=group)
        out.instant(track, execution.ts_ns, execution.name, execution.category, list(execution.args.items()))
        for key, what in (("Total Allocated", "allocated"), ("Total Reserved", "reserved")):
            value = execution.args.get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                counter = out.counter_track(f"{label} {what}", f"{label} {what} bytes", parent=group)
                out.counter(counter, execution.ts_ns, value)
        self.stats.allocator_events += 1

    # -- end ----------------------------------------------------------------------------------
    def finish(self) -> ConversionStats:
        """Write what is still pending, pair collectives with their callers and close every file."""
        while self.pending:
            self._write(self._pop_pending())
        for execution in pair_collectives(self.collectives, self.callers):
            self._write_runtime(execution)
        for writer in self._writers.values():
            self.files.finish(writer)
        return self.stats

    def abandon(self) -> None:
        for writer in self._writers.values():
            self.files.discard(writer)


def pair_collectives(collectives: list[ke.Execution], callers: list[tuple[int, str, Any]]) -> list[ke.Execution]:
    """Give each collective execution the ``External id`` of the ``c10d::`` op that issued it.

    Process groups run their work in the order it was issued, so the k-th ``gloo:all_reduce``
    to start was issued by the k-th ``c10d::allreduce_``. Pairs are made per collective, in
    time order, and only when the op started before the execution.
    """
    queues: dict[str, deque[tuple[int, Any]]] = {}
    for ts_ns, op, external in sorted(callers, key=lambda caller: caller[0]):
        queues.setdefault(op, deque()).append((ts_ns, external))
    ordered = sorted(collectives, key=lambda execution: execution.ts_ns)
    for execution in ordered:
        queue = queues.get(ke.collective_op(execution.name))
        if queue and queue[0][0] <= execution.ts_ns:
            _, external = queue.popleft()
            if external is not None:
                execution.args = {**execution.args, "caller External id": external}
    return ordered


def convert(
    source: Callable[[ProblemLog], Iterable[Batch]],
    files: PacketFiles,
    options: ConvertOptions,
    problems: ProblemLog,
    file_label: str,
    *,
    where: Callable[[int], str] = lambda position: f"event {position}",
) -> ConversionStats:
    """Convert the events ``source(problems)`` yields; reads them twice when a device exceeds its cap.

    ``source`` records reading problems in the log it is given; the second pass, when there
    is one, gets a scratch log so nothing is reported twice.
    """
    converter = _run(source, problems, TraceConverter(files, options, problems, file_label, where=where))
    cutoffs = converter.keeper.cutoffs() if converter.keeper is not None else {}
    if not cutoffs:
        return converter.stats
    scratch = ProblemLog()
    second = TraceConverter(files, options, scratch, file_label, where=where, cutoff=_Cutoff(cutoffs))
    return _run(source, scratch, second).stats


def _run(
    source: Callable[[ProblemLog], Iterable[Batch]], problems: ProblemLog, converter: TraceConverter
) -> TraceConverter:
    try:
        for batch in source(problems):
            converter.add_batch(batch)
        converter.finish()
    except BaseException:
        converter.abandon()
        raise
    return converter


def record_conversion(info: Any, stats: ConversionStats, problems: ProblemLog) -> None:
    """Put a conversion's counts, drops and skipped events into a ``TraceInfo``."""
    counts = info.event_counts
    counts.runtime_events = stats.runtime_events
    counts.device_events = stats.device_events
    counts.allocator_events = stats.allocator_events
    counts.framework_events = stats.framework_events
    counts.filtered_events = stats.filtered_events
    del info.drops[:]
    for device, (kept, total) in stats.drops().items():
        info.drops.add(device=device, kept=kept, total=total)
    del info.skipped_events[:]
    examples: dict[str, str] = {}
    for problem in problems.records:
        examples.setdefault(problem.kind, str(problem))
    for kind, count in sorted(problems.counts().items()):
        info.skipped_events.add(reason=kind, count=count, example=examples.get(kind, ""))

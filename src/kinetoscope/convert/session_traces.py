"""Kineto events -> the system trace (``ntrace.pb``) and per-device traces (``device_<N>.pb``).

Shared by capture (converting the ``trace.json`` torch just wrote) and ``kinetoscope import``
(converting traces recorded elsewhere). Events arrive in batches of ``(position, event)``;
the converter classifies each one (``model.execution``), writes runtime calls, collectives,
synchronizations and allocator events into the system trace and device executions into
their device's file, links them with flows, and counts everything it skipped, filtered or
dropped.

The parts live beside it: ``conversion`` (options, counts), ``event_selection`` (which events
are acted on), ``lane_tracks`` (slices placed on lanes), ``collective_pairing`` (collectives and
the ops that issued them).

Flows: a runtime call and the device execution it caused share Kineto's correlation id;
both get the flow id derived from it (``flow_ids`` on the call, ``terminating_flow_ids``
on the execution). Events without a correlation id are linked by Kineto's own flow events
(``ac2g``, ``async``...), which follow the event they bind to.

Caps: with ``max_events_per_device`` set, a first pass counts each device's executions
and remembers the newest timestamps (memory bounded by the cap); if a device went over,
a second pass writes only the newest ``max_events_per_device`` of it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from kinetoscope.convert.collective_pairing import pair_collectives
from kinetoscope.convert.conversion import Allocation, ConversionStats, ConvertOptions
from kinetoscope.convert.event_selection import ArgsDecoder, Batch, select
from kinetoscope.convert.lane_tracks import LaneTracks
from kinetoscope.format.kineto.json_head import paused_gc
from kinetoscope.format.kineto.trace_records import TraceRecord, codec
from kinetoscope.format.perfetto_packets.event_caps import Cutoff, NewestKeeper
from kinetoscope.format.perfetto_packets.events import EventFile
from kinetoscope.format.perfetto_packets.packet_files import PacketFiles
from kinetoscope.format.perfetto_packets.packets import PacketWriter
from kinetoscope.format.perfetto_packets.perfetto import stable_id
from kinetoscope.format.problems import ProblemLog
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.model import device_processes, kinds
from kinetoscope.model import execution as ke
from kinetoscope.model import track_names as model_tracks
from kinetoscope.model.scalars import as_int

_MASK64 = (1 << 64) - 1
_GOLDEN64 = 0x9E3779B97F4A7C15
_LOOKBACK_EVENTS = 64
# Correlation ids of the latest calls remembered, to tell a call that ends another's flow (bounded memory).
_STARTED_CALLS = 1 << 16
# Kinds whose correlation id starts a flow (the launch); device executions and syncs end one.
_FLOW_OUT_KINDS = frozenset({kinds.RUNTIME_CALL, kinds.DRIVER})
# What an allocator instant carries; its device is its track, totals are the counter tracks.
_ALLOCATION_DETAILS = ("Bytes", "Addr")


def _number(value: Any) -> float | None:
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class RecentIds:
    """The last ``limit`` ids seen: ``seen(i)`` says whether ``i`` was among them, and remembers it."""

    def __init__(self, limit: int) -> None:
        self._order: deque[int] = deque()
        self._ids: set[int] = set()
        self._limit = limit

    def seen(self, value: int) -> bool:
        if value in self._ids:
            return True
        self._ids.add(value)
        self._order.append(value)
        if len(self._order) > self._limit:
            self._ids.discard(self._order.popleft())
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
        cutoff: Cutoff | None = None,
        decode_args: ArgsDecoder | None = None,
    ) -> None:
        self.files = files
        self.decode_args = decode_args or codec().args
        self._base_ns = options.base_ns
        self.options = options
        self.problems = problems
        self.file_label = file_label
        self.where = where
        self.cutoff = cutoff
        capped = options.max_events_per_device and cutoff is None
        self.keeper = NewestKeeper(options.max_events_per_device or 0) if capped else None
        self.stats = ConversionStats()
        self.flow_salt = stable_id(options.session_id, "flows", bits=64)
        self.placer = device_processes.Placer()
        self.runtime: EventFile | None = None
        self.devices: dict[int, EventFile] = {}
        self._writers: dict[EventFile, PacketWriter] = {}
        self.lanes: dict[tuple[int, str], model_tracks.Lanes] = {}
        self._device_tracks: dict[tuple[int, int, bool], LaneTracks] = {}
        self._runtime_tracks: dict[tuple[str, int | str], LaneTracks] = {}
        self.pending: deque[ke.Execution] = deque()
        self._calls_started = RecentIds(_STARTED_CALLS)
        self.pending_by_key: dict[tuple[Any, Any, Any], ke.Execution] = {}
        self.collectives: list[ke.Execution] = []
        self._memory_tracks: dict[str, tuple[int, int, int | None]] = {}
        self._memory_labels: dict[tuple[Any, Any], str] = {}
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
        """Convert a batch of ``(position, record)``: select the events to write, decode their args in one call."""
        self.placer.place(batch)  # device tasks on a process named for the device (model.device_processes)
        work, framework = select(batch)
        self.stats.framework_events += framework
        if not work:
            return
        flow, unknown, caller = ke.FLOW, ke.UNKNOWN, ke.CALLER
        needing = [record for _, record, action in work if action is not flow and action is not unknown]
        args = iter(self.decode_args(needing))
        add, flow_event = self._add, self._flow_event
        for position, record, action in work:
            if action is flow:
                flow_event(record)
            elif action is unknown:
                message = f"unknown category {record.cat!r}; left in trace.json only"
                self._skip(position, "unknown_category", message)
            elif action is caller:
                self._note_caller(record, next(args))
            else:
                add(position, record, next(args), action)

    def _add(self, position: int, record: TraceRecord, args: dict[str, Any], action: ke.Action) -> None:
        try:
            execution = ke.normalise(record, args, action, position, self._base_ns)
        except ke.Skip as skip:
            self._skip(position, skip.kind, str(skip))
            return
        if self._admits(execution):
            self._push(execution)

    def _note_caller(self, record: TraceRecord, args: dict[str, Any]) -> None:
        try:
            ts_ns = ke.to_ns(record.ts, self.options.base_ns)
        except ke.Skip:
            return
        self.callers.append((ts_ns, ke.collective_op(record.name), args.get("External id")))

    def _skip(self, position: int, kind: str, message: str) -> None:
        self.stats.skipped[kind] += 1
        self.problems.add(self.file_label, self.where(position), kind, message)

    def _admits(self, execution: ke.Execution) -> bool:
        window = self.options.window_ns
        if window is not None and (execution.ts_ns + execution.dur_ns < window[0] or execution.ts_ns > window[1]):
            self._skip(execution.position, "outside_window", "event lies wholly outside the profiling window")
            return False
        if self.options.device_enabled is not None and not self.admits_device(execution.device):
            return False
        if execution.layer == kinds.DEVICE:
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
        correlation = execution.correlation
        if correlation is not None:
            flow = self.flow_id(correlation)
            if execution.layer == kinds.DEVICE or execution.kind == kinds.SYNC:
                execution.flow_in = flow
            elif execution.kind in _FLOW_OUT_KINDS:
                # The first call with a correlation id starts its flow; a later call with the same id ends it.
                if self._calls_started.seen(correlation):
                    execution.flow_in = flow
                else:
                    execution.flow_out = flow
        if execution.kind == kinds.COLLECTIVE:
            self.collectives.append(execution)
            return
        pending = self.pending
        pending.append(execution)
        try:  # noqa: SIM105 - suppress() would cost a context manager per event
            self.pending_by_key[execution.raw_key] = execution
        except TypeError:  # a pid, tid or ts that is a list or an object: no flow event can name it
            pass
        if len(pending) > _LOOKBACK_EVENTS:
            self._write(self._pop_pending())

    def _pop_pending(self) -> ke.Execution:
        execution = self.pending.popleft()
        by_key = self.pending_by_key
        try:
            if by_key.get(execution.raw_key) is execution:
                del by_key[execution.raw_key]
        except TypeError:
            pass
        return execution

    def _flow_event(self, record: TraceRecord) -> None:
        """A launch flow event: binds the flow to the execution just before it (same pid, tid and ts)."""
        try:
            target = self.pending_by_key.get((record.pid, record.tid, record.ts))
        except TypeError:  # a pid, tid or ts that is a list or an object
            return
        if target is None:
            return
        ph = record.ph
        # Most flows repeat what the correlation id already linked: nothing to do.
        if ph == "s" and target.flow_out is None:
            flow = self._flow_of(record.id)
            if flow is not None and target.flow_in != flow:
                target.flow_out = flow
        elif ph == "f" and target.flow_in is None and target.flow_out is None:
            # A call with a correlation id starts its flow whatever the flow events say (the model's rule).
            flow = self._flow_of(record.id)
            if flow is not None:
                target.flow_in = flow

    def _flow_of(self, flow_id: Any) -> int | None:
        number = as_int(flow_id)
        return self.flow_id(number) if number is not None else None

    def flow_id(self, correlation: int) -> int:
        """The session-unique flow id of a correlation id."""
        flow = (((correlation & _MASK64) * _GOLDEN64) & _MASK64) ^ self.flow_salt
        return flow or 1

    # -- writing ------------------------------------------------------------------------------
    def _write(self, execution: ke.Execution) -> None:
        if execution.layer == kinds.DEVICE:
            key = (execution.device, execution.stream, execution.kind == kinds.DEVICE_ANNOTATION)
            (self._device_tracks.get(key) or self._new_device_tracks(key)).write(execution)
            self.stats.device_events += 1
        elif execution.kind == kinds.ALLOCATION:
            self._write_allocation(execution)
        else:
            self._write_runtime(execution)

    def _new_device_tracks(self, key: tuple[int, int, bool]) -> LaneTracks:
        device, stream, annotations = key
        base = model_tracks.device_track_name(stream, annotations)
        tracks = self._device_tracks[key] = self._lane_tracks(self._device_file(device), device, base, None)
        return tracks

    def _write_runtime(self, execution: ke.Execution) -> None:
        if self.runtime is None:
            return
        sync = execution.kind == kinds.SYNC
        key = (execution.kind, execution.device if sync else execution.thread)
        (self._runtime_tracks.get(key) or self._new_runtime_tracks(self.runtime, key)).write(execution)
        self.stats.runtime_events += 1

    def _new_runtime_tracks(self, out: EventFile, key: tuple[str, int | str]) -> LaneTracks:
        kind, where = key
        if kind == kinds.SYNC:
            group = out.track(f"device {where}", f"device {where}", rank=1)
            base = model_tracks.sync_track_name(int(where))
        else:
            thread = model_tracks.thread_label(where)
            group = out.track(thread, thread, rank=0)
            base = model_tracks.thread_track_name(thread, kind)
        tracks = self._runtime_tracks[key] = self._lane_tracks(out, -2, base, group)
        return tracks

    def _lane_tracks(self, out: EventFile, scope: int, base: str, parent: int | None) -> LaneTracks:
        lanes = self.lanes.get((scope, base))
        if lanes is None:
            lanes = self.lanes[(scope, base)] = model_tracks.Lanes()
        return LaneTracks(out, base, parent, lanes)

    def _write_allocation(self, execution: ke.Execution) -> None:
        args = execution.args
        details = []
        for key in _ALLOCATION_DETAILS:
            if key in args:
                details.append((key, args[key]))
        allocated, reserved = args.get("Total Allocated"), args.get("Total Reserved")
        label = self._memory_label(args)
        self.write_allocation(Allocation(execution.ts_ns, label, details, _number(allocated), _number(reserved)))

    def _memory_label(self, args: dict[str, Any]) -> str:
        place = (args.get("Device Type"), args.get("Device Id"))
        try:
            label = self._memory_labels.get(place)
        except TypeError:  # an id that is not a number or a string
            return ke.memory_label(args)
        if label is None:
            label = self._memory_labels[place] = ke.memory_label(args)
        return label

    def write_allocation(self, allocation: Allocation) -> None:
        """An allocator event: an instant on its device's allocator track, and the totals as counters."""
        out = self.runtime
        if out is None:
            return
        tracks = self._memory_tracks.get(allocation.label) or self._declare_memory_tracks(out, allocation.label)
        out.instant(tracks[0], allocation.ts_ns, kinds.MEMORY_EVENT, "cpu_instant_event", allocation.details)
        if allocation.allocated_bytes is not None:
            out.counter(tracks[1], allocation.ts_ns, allocation.allocated_bytes)
        # The host allocator reserves nothing beyond what it allocates.
        if allocation.reserved_bytes is not None and tracks[2] is not None:
            out.counter(tracks[2], allocation.ts_ns, allocation.reserved_bytes)
        self.stats.allocator_events += 1

    def _declare_memory_tracks(self, out: EventFile, label: str) -> tuple[int, int, int | None]:
        group = out.track("memory", "memory", rank=2)
        allocator = out.track(f"memory · {label}", f"{label} allocator", parent=group)
        allocated = out.counter_track(f"{label} allocated", f"{label} allocated bytes", parent=group)
        reserved = None
        if label != "cpu":
            reserved = out.counter_track(f"{label} reserved", f"{label} reserved bytes", parent=group)
        tracks = self._memory_tracks[label] = (allocator, allocated, reserved)
        return tracks

    def admits_device(self, device: int) -> bool:
        """Whether events of ``device`` (-1: none) pass ``capture_enabled_for_devices``; counts those that do not."""
        enabled = self.options.device_enabled
        if enabled is None or device < 0 or enabled(device):
            return True
        self.stats.filtered_events += 1
        return False

    # -- end ----------------------------------------------------------------------------------
    def finish(self) -> ConversionStats:
        """Write what is still pending, pair collectives with their callers and close every file."""
        while self.pending:
            self._write(self._pop_pending())
        for execution in pair_collectives(self.collectives, self.callers):
            self._write_runtime(execution)
        for events, writer in self._writers.items():
            events.flush()
            self.files.finish(writer)
        return self.stats

    def abandon(self) -> None:
        for writer in self._writers.values():
            self.files.discard(writer)


def convert(
    source: Callable[[ProblemLog], Iterable[Batch]],
    files: PacketFiles,
    options: ConvertOptions,
    problems: ProblemLog,
    file_label: str,
    *,
    where: Callable[[int], str] = lambda position: f"event {position}",
    extra: Callable[[TraceConverter], None] | None = None,
    decode_args: ArgsDecoder | None = None,
) -> ConversionStats:
    """Convert the events ``source(problems)`` yields; reads them twice when a device exceeds its cap.

    ``source`` records reading problems in the log it is given; the second pass, when there
    is one, gets a scratch log so nothing is reported twice. ``extra``, when given, writes
    more events through the converter after the source's (allocator events read another way).
    ``decode_args`` gives the args of many records as dicts (default: the record codec's).
    """
    first = TraceConverter(files, options, problems, file_label, where=where, decode_args=decode_args)
    converter = _run(source, problems, first, extra)
    cutoffs = converter.keeper.cutoffs() if converter.keeper is not None else {}
    if not cutoffs:
        return converter.stats
    scratch = ProblemLog()
    second = TraceConverter(
        files, options, scratch, file_label, where=where, cutoff=Cutoff(cutoffs), decode_args=decode_args
    )
    return _run(source, scratch, second, extra).stats


def _run(
    source: Callable[[ProblemLog], Iterable[Batch]],
    problems: ProblemLog,
    converter: TraceConverter,
    extra: Callable[[TraceConverter], None] | None,
) -> TraceConverter:
    try:
        # Reading and converting make many small objects and no reference cycles: collections
        # would only walk the events of the batch at hand, again and again.
        with paused_gc():
            for batch in source(problems):
                converter.add_batch(batch)
            if extra is not None:
                extra(converter)
        converter.finish()
    except BaseException:
        converter.abandon()
        raise
    return converter

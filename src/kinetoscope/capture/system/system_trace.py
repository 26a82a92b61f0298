"""The system trace (RUNTIME) and device traces (DEVICE) of a session, written at export.

They are converted from the ``trace.json`` torch has just written. On a host without an
accelerator the trace is mostly operators and Python frames, so only the events needed are
read: the file is scanned for runtime, allocator, collective and flow events, and only those
are parsed. On an accelerator host runtime calls, kernels and their flows are most of what
is left once operators are skipped, and reading every event as a record (msgspec) is faster
than cutting each of them out (``benchmarks/export_event_traces.py --trace``: a 50 MB trace of
launches, kernels and flows converts in 1.4 s against 1.9 s; an 85 MB CPU trace with allocator
events in 1.26 s against 0.99 s).

The pass that reads the events also hashes ``trace.json`` for the manifest; allocator events
are read in one more pass over the mapped file, on the selective path only.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kinetoscope.capture.profiling import environment as env
from kinetoscope.capture.profiling.config import ProfileMode
from kinetoscope.capture.profiling.session import LiveSession
from kinetoscope.convert import conversion, event_selection
from kinetoscope.convert import session_traces as st
from kinetoscope.format.files import mapped
from kinetoscope.format.kineto import kineto_json, trace_records
from kinetoscope.format.perfetto_packets import perfetto as pf
from kinetoscope.format.perfetto_packets.packet_files import PacketFiles, SessionPacketFiles
from kinetoscope.format.problems import ProblemLog
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.model import execution as ke
from kinetoscope.model import kinds

# Events per converted batch when every event is read (see ``trace_import.IMPORT_BATCH_SIZE``).
RECORD_BATCH_SIZE = 8192
NO_ACCELERATOR = "no accelerator on this host: torch sees no CUDA or other device, so there are no device executions"

# Categories of the runtime and device layers, and launch flows: the events the system and device traces hold.
_CATEGORIES = (
    *(category for category, rule in kinds.CATEGORIES.items() if rule[0] != kinds.FRAMEWORK),
    *kinds.LAUNCH_FLOW_CATEGORIES,
)
_NAMES = (*kinds.COLLECTIVE_PREFIXES, kinds.CALLER_PREFIX)


def _selection(names: tuple[str, ...]) -> re.Pattern[bytes]:
    return re.compile(
        rb'"cat"\s*:\s*"(?:'
        + b"|".join(re.escape(name.encode()) for name in _CATEGORIES)
        + rb')"|"name"\s*:\s*"(?:'
        + b"|".join(re.escape(name.encode()) for name in names)
        + b")"
    )


# Every event the system and device traces need, allocator events included.
SELECT = _selection((kinds.MEMORY_EVENT, *_NAMES))
_SELECT_NO_MEMORY = _selection(_NAMES)
# An allocator event as torch's Kineto writes it, fields in this order; read without a JSON parse.
# The pattern starts at the rare literal so the scan skips quickly to each allocator event.
_MEMORY_MARK_RE = re.compile(re.escape(b'"[memory]"'))
_MEMORY_RE = re.compile(
    rb'"\[memory\]",\s*"pid":\s*[^,{}]*,\s*"tid":\s*[^,{}]*,\s*"ts":\s*(\d+)(?:\.(\d+))?\s*,'
    rb'\s*"args":\s*\{\s*"Total Reserved":\s*(-?\d+),\s*"Total Allocated":\s*(-?\d+),\s*"Bytes":\s*(-?\d+),'
    rb'\s*"Device Id":\s*(-?\d+),\s*"Device Type":\s*(-?\d+),\s*"Addr":\s*(-?\d+)'
)


@dataclass
class EventTraces:
    """What the conversion wrote: files and reasons per mode, counts, and problems."""

    runtime_files: list[str] = field(default_factory=list)
    runtime_reason: str = ""
    device_files: list[str] = field(default_factory=list)
    device_reason: str = ""
    stats: conversion.ConversionStats = field(default_factory=conversion.ConversionStats)
    problems: ProblemLog = field(default_factory=ProblemLog)
    trace_sha256: str = ""  # of trace.json, made by the conversion's pass over it


def write_event_traces(session: LiveSession, trace_path: Path) -> EventTraces:
    """Write ``ntrace.pb`` and ``device_<N>.pb`` for the modes the session's config asks for."""
    config = session.config
    result = EventTraces()
    enabled, result.device_reason = _enabled_devices(session)
    want_device = ProfileMode.DEVICE in config.modes and not result.device_reason
    options = conversion.ConvertOptions(
        base_ns=session.info.profiler_base_time_ns,
        session_id=session.identity.session_id,
        write_runtime=ProfileMode.RUNTIME in config.modes,
        write_device=want_device,
        device_enabled=config.device_enabled if config.capture_enabled_for_devices else None,
        max_events_per_device=config.max_events_per_device,
        expected_devices=tuple(enabled) if want_device else (),
    )
    files = SessionPacketFiles(session.path, session.header(""), pf.read_clocks_ns())
    every_event = env.device_count() > 0 and trace_records.codec().decode_span is not None
    hasher = hashlib.sha256()
    result.stats = convert_trace(trace_path, files, options, result.problems, every_event=every_event, hasher=hasher)
    result.trace_sha256 = hasher.hexdigest()
    if not every_event:
        # Only the selected events were parsed, so framework events were not counted.
        result.stats.framework_events = 0
    result.runtime_files = [name for name in result.stats.files if name == layout.SYSTEM_TRACE]
    result.device_files = sorted(name for name in result.stats.files if name != layout.SYSTEM_TRACE)
    return result


class _LayoutChangedError(Exception):
    """An allocator event is not in the layout ``_MEMORY_RE`` reads; convert the general way."""


class _HashOnce:
    """Hands ``hasher`` to the first pass over the trace only (a cap or a change of path reads it again)."""

    def __init__(self, hasher: Any) -> None:
        self._hasher = hasher

    def take(self) -> Any:
        hasher, self._hasher = self._hasher, None
        return hasher


def convert_trace(
    trace_path: Path,
    files: PacketFiles,
    options: conversion.ConvertOptions,
    problems: ProblemLog,
    *,
    every_event: bool = False,
    hasher: Any = None,
) -> conversion.ConversionStats:
    """Convert the runtime, device and allocator events of a ``trace.json`` torch wrote.

    ``every_event``: read every event as a record (the faster way when runtime calls and
    device executions are a large part of the trace, as on an accelerator host, and msgspec
    is installed). Otherwise only the events that need converting are cut out and parsed,
    and allocator events in torch's own layout are read by pattern, without a JSON parse; if
    any is not, the conversion starts again with every event on the general path.
    ``hasher`` (a ``hashlib`` object) has hashed the whole file when this returns.
    """
    once = _HashOnce(hasher)
    if every_event:
        return st.convert(
            lambda log: kineto_json.iter_trace_records(trace_path, log, RECORD_BATCH_SIZE, hasher=once.take()),
            files,
            options,
            problems,
            str(trace_path),
        )
    if options.write_runtime:
        try:
            return _convert(trace_path, files, options, problems, once.take, fast_memory=True)
        except _LayoutChangedError:
            pass
    return _convert(trace_path, files, options, problems, once.take, fast_memory=False)


def _convert(
    trace_path: Path,
    files: PacketFiles,
    options: conversion.ConvertOptions,
    problems: ProblemLog,
    hasher: Callable[[], Any],
    *,
    fast_memory: bool,
) -> conversion.ConversionStats:
    """``fast_memory``: read allocator events by pattern (in torch's layout); else every event the general way."""
    select = _SELECT_NO_MEMORY if fast_memory else SELECT
    log = ProblemLog() if fast_memory else problems

    def source(log: ProblemLog) -> Iterator[event_selection.Batch]:
        events = kineto_json.iter_selected_events(trace_path, log, select, hasher=hasher())
        batches = event_selection.parsed_records(events)
        # The reader may hand over events the selection does not match (a span it could not cut,
        # the last event): allocator events among them are written by pattern already.
        return _without_allocations(batches) if fast_memory else batches

    stats = st.convert(
        source,
        files,
        options,
        log,
        str(trace_path),
        where=lambda position: f"byte {position}",
        extra=(lambda converter: write_allocations(trace_path, converter)) if fast_memory else None,
        decode_args=event_selection.parsed_args,
    )
    if fast_memory:
        problems.merge(log)
    return stats


def _without_allocations(batches: Iterator[event_selection.Batch]) -> Iterator[event_selection.Batch]:
    for batch in batches:
        yield [(position, record) for position, record in batch if record.name != kinds.MEMORY_EVENT]


def write_allocations(trace_path: Path, converter: st.TraceConverter) -> None:
    """Write every allocator event of ``trace_path`` through ``converter``, reading fields by pattern.

    Raises ``_LayoutChangedError`` at the first ``"[memory]"`` not in the layout the pattern reads.
    """
    base_ns = converter.options.base_ns
    labels: dict[tuple[bytes, bytes], tuple[str, int]] = {}
    with mapped(trace_path) as data:
        for mark in _MEMORY_MARK_RE.finditer(data):
            match = _MEMORY_RE.match(data, mark.start())
            if match is None:
                raise _LayoutChangedError
            whole, fraction, reserved, allocated, size, index, kind, addr = match.groups()
            place = labels.get((kind, index)) or _place(labels, kind, index)
            if not converter.admits_device(place[1]):
                continue
            ts_ns = int(whole) * 1000 + int((fraction or b"0")[:3].ljust(3, b"0")) + base_ns
            details = (("Bytes", int(size)), ("Addr", int(addr)))
            converter.write_allocation(conversion.Allocation(ts_ns, place[0], details, int(allocated), int(reserved)))


def _place(labels: dict[tuple[bytes, bytes], tuple[str, int]], kind: bytes, index: bytes) -> tuple[str, int]:
    """(track label, device index or -1 for host memory) of an allocator event, remembered in ``labels``."""
    device_type, device_index = int(kind), int(index)
    label = ke.memory_label({"Device Type": device_type, "Device Id": device_index})
    place = labels[(kind, index)] = (label, device_index if device_type else -1)
    return place


def _enabled_devices(session: LiveSession) -> tuple[list[int], str]:
    """(devices to write a file for, reason when there are none)."""
    count = env.device_count()
    if count == 0:
        return [], NO_ACCELERATOR
    enabled = [index for index in range(count) if session.config.device_enabled(index)]
    if not enabled:
        spec = session.config.capture_enabled_for_devices
        return [], f"capture_enabled_for_devices={spec!r} selects none of the {count} device(s)"
    return enabled, ""


def drop_warnings(stats: conversion.ConversionStats, cap: int) -> list[str]:
    """One warning per device that lost executions to ``max_events_per_device``."""
    return [
        f"kinetoscope: device {device}: kept the newest {kept:,} of {total:,} device events "
        f"(max_events_per_device={cap:,}); the {total - kept:,} oldest were dropped. Raise "
        "max_events_per_device, shorten the profiled window (fewer active steps in the schedule), "
        "or profile fewer devices with capture_enabled_for_devices."
        for device, (kept, total) in stats.drops().items()
    ]


def warn_drops(messages: list[str]) -> None:
    for message in messages:
        warnings.warn(message, stacklevel=4)

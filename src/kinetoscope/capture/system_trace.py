"""The system trace (RUNTIME) and device traces (DEVICE) of a session, written at export.

They are converted from the ``trace.json`` torch has just written, reading only the events
they need: the file is scanned for runtime, device, allocator, collective and flow events,
and only those are parsed, so operators and Python frames (most of a trace) cost a byte
scan, not a JSON decode.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from kinetoscope.capture import environment as env
from kinetoscope.capture.config import ProfileMode
from kinetoscope.capture.session import LiveSession
from kinetoscope.format import kineto_events as ke
from kinetoscope.format import kineto_json
from kinetoscope.format import perfetto as pf
from kinetoscope.format import session_dir as layout
from kinetoscope.format import system_trace as st
from kinetoscope.format.problems import ProblemLog

NO_ACCELERATOR = "no accelerator on this host: torch sees no CUDA or other device, so there are no device executions"

_CATEGORIES = (*ke.CATEGORY_KINDS, *ke.LAUNCH_FLOW_CATEGORIES)
_NAMES = (ke.MEMORY_EVENT, *ke.COLLECTIVE_PREFIXES, ke.COMMS_METADATA_OP, ke.CALLER_PREFIX)
SELECT = re.compile(
    rb'"cat"\s*:\s*"(?:'
    + b"|".join(re.escape(name.encode()) for name in _CATEGORIES)
    + rb')"|"name"\s*:\s*"(?:'
    + b"|".join(re.escape(name.encode()) for name in _NAMES)
    + b")"
)


@dataclass
class EventTraces:
    """What the conversion wrote: files and reasons per mode, counts, and problems."""

    runtime_files: list[str] = field(default_factory=list)
    runtime_reason: str = ""
    device_files: list[str] = field(default_factory=list)
    device_reason: str = ""
    stats: st.ConversionStats = field(default_factory=st.ConversionStats)
    problems: ProblemLog = field(default_factory=ProblemLog)


def write_event_traces(session: LiveSession, trace_path: Path) -> EventTraces:
    """Write ``ntrace.pb`` and ``device_<N>.pb`` for the modes the session's config asks for."""
    config = session.config
    result = EventTraces()
    enabled, result.device_reason = _enabled_devices(session)
    want_device = ProfileMode.DEVICE in config.modes and not result.device_reason
    options = st.ConvertOptions(
        base_ns=_base_ns(trace_path),
        session_id=session.identity.session_id,
        write_runtime=ProfileMode.RUNTIME in config.modes,
        write_device=want_device,
        device_enabled=config.device_enabled if config.capture_enabled_for_devices else None,
        max_events_per_device=config.max_events_per_device,
        expected_devices=tuple(enabled) if want_device else (),
    )
    files = st.SessionPacketFiles(session.path, session.header(""), pf.read_clocks_ns())
    result.stats = st.convert(
        lambda log: kineto_json.iter_selected_events(trace_path, log, SELECT),
        files,
        options,
        result.problems,
        str(trace_path),
        where=lambda position: f"byte {position}",
    )
    # Only the selected events were parsed, so framework events were not counted.
    result.stats.framework_events = 0
    result.runtime_files = [name for name in result.stats.files if name == layout.SYSTEM_TRACE]
    result.device_files = sorted(name for name in result.stats.files if name != layout.SYSTEM_TRACE)
    return result


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


def _base_ns(trace_path: Path) -> int:
    """Kineto's base time when its timestamps are relative to it; 0 when they are epoch microseconds."""
    base = ke.as_int(kineto_json.read_trace_metadata(trace_path).get("baseTimeNanoseconds"))
    return base if base is not None and base > 0 else 0


def drop_warnings(stats: st.ConversionStats, cap: int) -> list[str]:
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

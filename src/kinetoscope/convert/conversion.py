"""What a conversion is asked (``ConvertOptions``) and what it reports (``ConversionStats``), and
where those counts go in the session's ``TraceInfo``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kinetoscope.format.problems import ProblemLog
from kinetoscope.format.session_files import trace_info


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


class Allocation(NamedTuple):
    """One allocator event: where (``cpu``, ``cuda:0``...), its details, and the totals after it."""

    ts_ns: int
    label: str
    details: Sequence[tuple[str, Any]]
    allocated_bytes: float | None
    reserved_bytes: float | None


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
    trace_info.record_skipped(info, problems)

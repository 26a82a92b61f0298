"""One runtime call, device execution or allocator event, normalised for the `.pb` sink.

The rules come from ``kinds`` (layer and kind) and ``scalars`` (ids and times), the same rules
ingest applies to whole columns, so the system and device traces and the dataset agree event
for event (``tests/golden/test_conformance.py``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kinetoscope.format.kineto.trace_records import TraceRecord
from kinetoscope.model import kinds
from kinetoscope.model.scalars import TS_US_LIMIT, as_int, duration_ns, is_timestamp_us, us_to_ns

# What the converter does with an event: write a (layer, kind), or one of these.
Action = tuple[str, str]
FLOW: Action = ("flow", "launch")
CALLER: Action = ("framework", "caller")
UNKNOWN: Action = ("framework", "unknown_category")

# c10 DeviceType values as written in "[memory]" events' "Device Type".
DEVICE_TYPE_NAMES = {0: "cpu", 1: "cuda", 6: "hip", 12: "xpu", 13: "mps", 15: "hpu", 19: "mtia", 20: "privateuseone"}


@dataclass(slots=True)
class Execution:
    """A runtime call or device execution (or allocator event), normalised from one Kineto event."""

    layer: str
    kind: str
    category: str
    name: str
    ts_ns: int
    dur_ns: int
    thread: int | str
    device: int
    stream: int
    correlation: int | None
    args: dict[str, Any]
    position: int
    raw_key: tuple[Any, Any, Any]
    flow_out: int | None = None
    flow_in: int | None = None


class Skip(Exception):  # noqa: N818 - a control-flow signal carrying the reason
    """An event that cannot be converted; ``kind`` is the problem kind, the message says why."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def classify(record: TraceRecord) -> tuple[Action | None, bool]:
    """What the converter does with an event (None: nothing), and whether it counts as a framework event."""
    ph = record.ph
    if ph in kinds.FLOW_PHASES:
        category = record.cat
        launch = isinstance(category, str) and category in kinds.LAUNCH_FLOW_CATEGORIES
        return (FLOW if launch else None), False
    found = layer_kind(record)
    if found is not None:
        return found, False
    if kinds.is_unknown_category(record.cat):
        return UNKNOWN, ph != "M"
    name = record.name
    if ph == "X" and isinstance(name, str) and name.startswith(kinds.CALLER_PREFIX):
        return CALLER, True
    return None, ph != "M"


def layer_kind(record: TraceRecord) -> Action | None:
    """(layer, kind) of a runtime or device slice or allocator instant; None for everything else."""
    found = kinds.rule(record.cat, record.name, record.ph)
    if found is None or found[0] == kinds.FRAMEWORK:
        return None
    return found if record.ph == "X" or found[1] == kinds.ALLOCATION else None


def to_ns(ts_us: Any, base_ns: int) -> int:
    """Kineto's microsecond timestamp (int or float, or a number written as a string, as torch_npu's
    ``trace_view.json`` has them, read as the column form reads it: as a float) as integer
    nanoseconds on the trace's clock."""
    kind = type(ts_us)
    if kind is str:
        try:
            ts_us, kind = float(ts_us), float
        except ValueError:
            raise Skip("missing_field", f"timestamp {ts_us!r} is not a number") from None
    if kind is int and -TS_US_LIMIT < ts_us < TS_US_LIMIT:
        whole_us: int = ts_us
        return whole_us * 1000 + base_ns
    if kind is float and -TS_US_LIMIT < ts_us < TS_US_LIMIT:  # finite: nan compares false
        return us_to_ns(ts_us, base_ns)
    if isinstance(ts_us, bool) or not isinstance(ts_us, (int, float)):
        raise Skip("missing_field", f"timestamp {ts_us!r} is not a number")
    if not is_timestamp_us(ts_us):
        raise Skip("missing_field", f"timestamp {ts_us!r} is not a finite number within 2^62 ns")
    return us_to_ns(int(ts_us), base_ns)


def normalise(record: TraceRecord, args: dict[str, Any], action: Action, position: int, base_ns: int) -> Execution:
    """The ``Execution`` of a runtime or device event with its decoded ``args``; raises ``Skip`` if it cannot be."""
    name = record.name
    if not isinstance(name, str):
        raise Skip("missing_field", "event has no name")
    layer, kind = action
    ts = record.ts
    ts_ns = to_ns(ts, base_ns)
    dur = 0 if kind == kinds.ALLOCATION else event_duration_ns(record.dur)
    pid, tid = record.pid, record.tid
    device, stream = placement(pid, tid, args, layer, kind)
    correlation = args.get("correlation")
    if correlation is not None and correlation.__class__ is not int:
        correlation = as_int(correlation)
    thread: int | str = tid if isinstance(tid, (int, str)) else -1
    category = record.cat
    category = category if category.__class__ is str else "memory"
    return Execution(
        layer, kind, category, name, ts_ns, dur, thread, device, stream, correlation, args, position, (pid, tid, ts)
    )


def event_duration_ns(dur: Any) -> int:
    """A complete event's ``dur`` (µs) as integer nanoseconds; raises ``Skip`` when it is missing or negative."""
    kind = type(dur)
    if kind is float and 0.0 <= dur < TS_US_LIMIT:  # finite: nan compares false
        finite_us: float = dur
        return round(finite_us * 1000.0)
    if kind is int and 0 <= dur < TS_US_LIMIT:
        whole_us: int = dur
        return whole_us * 1000
    if isinstance(dur, bool) or not isinstance(dur, (int, float)):
        raise Skip("missing_field", f"complete event has no numeric duration (dur={dur!r})")
    if isinstance(dur, float) and not math.isfinite(dur):
        raise Skip("missing_field", f"duration {dur!r} is not a finite number")
    if dur < 0:
        raise Skip("negative_duration", f"negative duration {dur} µs")
    if dur >= TS_US_LIMIT:
        raise Skip("missing_field", f"duration {dur!r} µs is beyond 2^62 ns")
    return duration_ns(float(dur) if isinstance(dur, float) else int(dur))


def placement(pid: Any, tid: Any, args: dict[str, Any], layer: str, kind: str) -> tuple[int, int]:
    """(device, stream) of an event, -1 where it has none: device work from its ``device`` /
    ``stream`` args, else Kineto's convention (pid is the device, tid the stream);
    synchronizations from their args alone (their pid and tid are the host's); allocator events
    on the memory's device; other runtime calls on none."""
    if kind == kinds.ALLOCATION:
        return memory_device(args), -1
    if layer != kinds.DEVICE and kind != kinds.SYNC:
        return -1, -1
    device, stream = args.get("device"), args.get("stream")
    if device.__class__ is not int:
        device = as_int(device)
    if stream.__class__ is not int:
        stream = as_int(stream)
    if layer == kinds.DEVICE:
        device = as_int(pid) if device is None else device
        stream = as_int(tid) if stream is None else stream
    return (device if device is not None else -1), (stream if stream is not None else -1)


def memory_device(args: dict[str, Any]) -> int:
    """The accelerator index of a ``[memory]`` event, or -1 for host memory."""
    if as_int(args.get("Device Type")) in (None, 0):
        return -1
    index = as_int(args.get("Device Id"))
    return index if index is not None else -1


def memory_label(args: dict[str, Any]) -> str:
    """ "cpu", "cuda:0", ...: where a ``[memory]`` event's memory lives."""
    kind = as_int(args.get("Device Type"))
    if kind in (None, 0):
        return "cpu"
    index = as_int(args.get("Device Id"))
    name = DEVICE_TYPE_NAMES.get(kind or 0, f"device_type_{kind}")
    return f"{name}:{index}" if index is not None and index >= 0 else name


def collective_op(name: str) -> str:
    """The collective an op or annotation names, for pairing ``c10d::allreduce_`` with ``gloo:all_reduce``."""
    for prefix in (kinds.CALLER_PREFIX, *kinds.COLLECTIVE_PREFIXES):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    return name.replace("_", "").lower()

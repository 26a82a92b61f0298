"""What each Kineto event is: its layer (framework, runtime, device), kind, device, stream and time.

Kineto has renamed its categories over the years (``Runtime`` -> ``cuda_runtime``,
``Kernel`` -> ``kernel``, ``async`` -> ``ac2g``, ``external id`` -> ``External id``); the
tables here accept every spelling found in real traces. Framework events (operators, Python
frames, user annotations) stay in ``trace.json``; runtime and device events are converted
into the system and device traces.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from kinetoscope.format.trace_records import TraceRecord

RUNTIME = "runtime"
DEVICE = "device"

# category -> (layer, kind)
CATEGORY_KINDS: dict[str, tuple[str, str]] = {
    "kernel": (DEVICE, "kernel"),
    "Kernel": (DEVICE, "kernel"),
    "gpu_memcpy": (DEVICE, "memcpy"),
    "Memcpy": (DEVICE, "memcpy"),
    "gpu_memset": (DEVICE, "memset"),
    "Memset": (DEVICE, "memset"),
    "gpu_user_annotation": (DEVICE, "annotation"),
    "mtia_ccp_events": (DEVICE, "execution"),
    "cuda_profiler_range": (DEVICE, "profiler_range"),
    "cuda_runtime": (RUNTIME, "runtime"),
    "Runtime": (RUNTIME, "runtime"),
    "mtia_runtime": (RUNTIME, "runtime"),
    "xpu_runtime": (RUNTIME, "runtime"),
    "privateuse1_runtime": (RUNTIME, "runtime"),
    "glow_runtime": (RUNTIME, "runtime"),
    "cuda_driver": (RUNTIME, "driver"),
    "privateuse1_driver": (RUNTIME, "driver"),
    "cuda_sync": (RUNTIME, "sync"),
}
# Categories that stay in the framework layer (trace.json) and are not converted.
FRAMEWORK_CATEGORIES = frozenset(
    {
        "cpu_op",
        "Operator",
        "user_annotation",
        "python_function",
        "Python",
        "Trace",
        "cpu_instant_event",
        "overhead",
        "Overhead",
        "external_correlation",
        "mtia_insight",
        "fwdbwd",
    }
)
# Flow categories from a host call to the device execution it caused.
LAUNCH_FLOW_CATEGORIES = frozenset({"ac2g", "async", "async_cpu_to_gpu", "async_gpu"})
COLLECTIVE_PREFIXES = ("gloo:", "nccl:", "rccl:", "xccl:", "mpi:", "ucc:")
COMMS_METADATA_OP = "record_param_comms"
CALLER_PREFIX = "c10d::"
MEMORY_EVENT = "[memory]"
# Phases of Kineto's flow events ("s" start, "f" finish, "t" step).
FLOW_PHASES = ("s", "f", "t")

# What the converter does with an event: an execution of a (layer, kind), or one of these.
Action = tuple[str, str]
ALLOCATION: Action = (RUNTIME, "allocation")
COLLECTIVE: Action = (RUNTIME, "collective")
FLOW: Action = ("flow", "launch")
CALLER: Action = ("framework", "caller")
UNKNOWN: Action = ("framework", "unknown_category")

# c10 DeviceType values as written in "[memory]" events' "Device Type".
DEVICE_TYPE_NAMES = {0: "cpu", 1: "cuda", 6: "hip", 12: "xpu", 13: "mps", 15: "hpu", 19: "mtia", 20: "privateuseone"}

_DIGITS_RE = re.compile(r"-?\d+")


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
    """What the converter does with an event (None: nothing), and whether it counts as a framework event.

    The reference rules; the converter's batch loop decides the common cases from the category
    alone and comes here for the rest.
    """
    ph = record.ph
    if ph in FLOW_PHASES:
        category = record.cat
        launch = isinstance(category, str) and category in LAUNCH_FLOW_CATEGORIES
        return (FLOW if launch else None), False
    found = layer_kind(record)
    if found is not None:
        return found, False
    name = record.name
    if is_unknown_category(record.cat):
        return UNKNOWN, ph != "M"
    if ph == "X" and isinstance(name, str) and name.startswith(CALLER_PREFIX):
        return CALLER, True
    return None, ph != "M"


def layer_kind(record: TraceRecord) -> Action | None:
    """(layer, kind) of a runtime or device event; None for framework, metadata and flow events."""
    category = record.cat
    found = CATEGORY_KINDS.get(category) if isinstance(category, str) else None
    if found is not None:
        return found if record.ph == "X" else None
    name = record.name
    if not isinstance(name, str):
        return None
    if name == MEMORY_EVENT and record.ph in ("i", "I"):
        return ALLOCATION
    if record.ph != "X":
        return None
    if name.startswith(COLLECTIVE_PREFIXES) or name == COMMS_METADATA_OP:
        return COLLECTIVE
    return None


def is_unknown_category(category: Any) -> bool:
    """Whether ``category`` is a string none of the tables here knows."""
    if not isinstance(category, str):
        return False
    known = category in CATEGORY_KINDS or category in FRAMEWORK_CATEGORIES or category in LAUNCH_FLOW_CATEGORIES
    return not known


def to_ns(ts_us: Any, base_ns: int) -> int:
    """Kineto's microsecond timestamp (int or float) as integer nanoseconds on the trace's clock."""
    kind = type(ts_us)
    if kind is float and ts_us - ts_us == 0.0:  # finite: inf - inf and nan - nan are nan
        finite_us: float = ts_us
        return round(finite_us * 1000) + base_ns
    if kind is int:
        whole_us: int = ts_us
        return whole_us * 1000 + base_ns
    if isinstance(ts_us, bool) or not isinstance(ts_us, (int, float)):
        raise Skip("missing_field", f"timestamp {ts_us!r} is not a number")
    if isinstance(ts_us, float):
        if not math.isfinite(ts_us):
            raise Skip("missing_field", f"timestamp {ts_us!r} is not a finite number")
        return round(ts_us * 1000) + base_ns
    return int(ts_us) * 1000 + base_ns


def as_int(value: Any) -> int | None:
    """An integer id from an int or a string such as ``"stream 7"`` or ``"0x1f"``; None otherwise."""
    if type(value) is int:
        return value
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value)
    return _int_of_text(value) if isinstance(value, str) else None


def _int_of_text(value: str) -> int | None:
    text = value.strip()
    if text.lower().startswith("0x"):
        try:
            return int(text, 16)
        except ValueError:
            return None
    match = _DIGITS_RE.search(text)
    return int(match.group()) if match else None


def normalise(record: TraceRecord, args: dict[str, Any], action: Action, position: int, base_ns: int) -> Execution:
    """The ``Execution`` of a runtime or device event with its decoded ``args``; raises ``Skip`` if it cannot be."""
    name = record.name
    if not isinstance(name, str):
        raise Skip("missing_field", "event has no name")
    layer, kind = action
    ts = record.ts
    ts_ns = to_ns(ts, base_ns)
    dur_ns = _duration_ns(record.dur, kind)
    pid, tid = record.pid, record.tid
    device, stream = _placement(pid, tid, args, layer, kind)
    correlation = args.get("correlation")
    if correlation is not None and correlation.__class__ is not int:
        correlation = as_int(correlation)
    thread: int | str = tid if tid.__class__ is int or isinstance(tid, (int, str)) else -1
    category = record.cat
    category = category if category.__class__ is str else _category_text(category)
    return Execution(
        layer, kind, category, name, ts_ns, dur_ns, thread, device, stream, correlation, args, position, (pid, tid, ts)
    )


def _category_text(category: Any) -> str:
    return str(category) if isinstance(category, str) else "memory"


def _duration_ns(dur: Any, kind: str) -> int:
    if kind == "allocation":
        return 0
    if type(dur) is float and dur >= 0.0 and dur - dur == 0.0:
        return round(dur * 1000)
    if type(dur) is int and dur >= 0:
        return dur * 1000
    if isinstance(dur, bool) or not isinstance(dur, (int, float)):
        raise Skip("missing_field", f"complete event has no numeric duration (dur={dur!r})")
    if isinstance(dur, float) and not math.isfinite(dur):
        raise Skip("missing_field", f"duration {dur!r} is not a finite number")
    if dur < 0:
        raise Skip("negative_duration", f"negative duration {dur} µs")
    return round(dur * 1000) if isinstance(dur, float) else int(dur) * 1000


def _placement(pid: Any, tid: Any, args: dict[str, Any], layer: str, kind: str) -> tuple[int, int]:
    """(device, stream) of an event; -1 where unknown."""
    if kind == "allocation":
        return memory_device(args), -1
    device = args.get("device")
    if device is not None and device.__class__ is not int:
        device = as_int(device)
    if layer == DEVICE or kind == "sync":
        if device is None:
            device = as_int(pid)
        stream = args.get("stream")
        if stream.__class__ is not int:
            stream = as_int(stream)
            if stream is None:
                stream = as_int(tid)
        return (device if device is not None else -1), (stream if stream is not None else -1)
    return (device if device is not None else -1), -1


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
    for prefix in (CALLER_PREFIX, *COLLECTIVE_PREFIXES):
        if name.startswith(prefix):
            name = name[len(prefix) :]
            break
    return name.replace("_", "").lower()

"""Memory snapshot files: PyTorch's snapshot structure, written and read without running code.

A snapshot is a pickled ``dict`` in the structure ``torch.cuda.memory._snapshot()`` returns,
so PyTorch's memory_viz (``python -m torch.cuda._memory_viz``, pytorch.org/memory_viz)
opens it:

- ``segments``: one dict per segment (``device``, ``address``, ``total_size``, ``blocks``
  with ``size``, ``requested_size``, ``state`` and ``frames``), the memory held at export;
- ``device_traces``: one list per device of trace entries (``action`` ``alloc`` /
  ``free_requested`` / ``free_completed``, ``addr``, ``size``, ``stream``, ``time_us`` and
  ``frames``: ``{"filename", "line", "name"}``, innermost first);
- ``kinetoscope``: kinetoscope's own metadata (``METADATA_KEY``): rank, clock, counts.

Pickle can name any callable, so loading one runs code. Snapshots are read here with an
unpickler that admits only plain containers and scalars (dict, list, tuple, set, str,
bytes, int, float, bool, None): a reference to any class or function is refused before
anything is called.
"""

from __future__ import annotations

import io
import pickle
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kinetoscope._errors import FormatError

METADATA_KEY = "kinetoscope"
SNAPSHOT_FORMAT = 1
# Protocol 4 with plain data uses only opcodes PyTorch's MemoryViz.js unpickler understands.
PICKLE_PROTOCOL = 4
ACTIONS = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
           "segment_map", "segment_unmap", "snapshot", "oom")


class _Refused(pickle.UnpicklingError):
    """The pickle reaches for something other than plain data."""


class _PlainUnpickler(pickle.Unpickler):
    """Builds plain containers and scalars only; any class, function or persistent id is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise _Refused(f"it refers to {module}.{name}")

    def persistent_load(self, pid: Any) -> Any:
        raise _Refused("it uses a persistent id")


def loads_plain(data: bytes, origin: str) -> Any:
    """Unpickle ``data`` admitting only plain containers and scalars; FormatError names ``origin``."""
    try:
        return _PlainUnpickler(io.BytesIO(data)).load()
    except _Refused as exc:
        raise FormatError(f"{origin}: refused: {exc}; only plain data is read, code never runs") from exc
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError,
            MemoryError) as exc:
        raise FormatError(f"{origin}: not a readable pickle ({type(exc).__name__}: {exc}); file cut short?") from exc


def dumps_snapshot(snapshot: dict[str, Any]) -> bytes:
    return pickle.dumps(snapshot, protocol=PICKLE_PROTOCOL)


def load_snapshot(path: Path) -> dict[str, Any]:
    """Read a snapshot file with the restricted unpickler and check its top-level structure."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise FormatError(f"{path}: cannot read: {exc.strerror or exc}") from exc
    snapshot = loads_plain(data, str(path))
    problem = structure_problem(snapshot)
    if problem:
        raise FormatError(f"{path}: not a memory snapshot: {problem}")
    result: dict[str, Any] = snapshot
    return result


def structure_problem(snapshot: object) -> str | None:
    """What keeps ``snapshot`` from being PyTorch's snapshot structure, or None."""
    if not isinstance(snapshot, dict):
        return f"expected a dict with 'segments' and 'device_traces', got {type(snapshot).__name__}"
    if not isinstance(snapshot.get("segments"), list):
        return "'segments' is missing or not a list"
    traces = snapshot.get("device_traces", [])
    if not isinstance(traces, list) or not all(isinstance(t, list) for t in traces):
        return "'device_traces' is not a list of lists"
    for device, trace in enumerate(traces):
        for index, entry in enumerate(trace):
            if not isinstance(entry, dict) or entry.get("action") not in ACTIONS:
                return f"device_traces[{device}][{index}] is not a trace entry with a known 'action'"
    return None


@dataclass(frozen=True)
class SnapshotSummary:
    """What a snapshot holds, in numbers."""

    segments: int
    live_blocks: int
    live_bytes: int
    entries_per_device: list[int]
    actions: dict[str, int]
    first_time_us: int | None
    last_time_us: int | None
    metadata: dict[str, Any] = field(default_factory=dict)


def summarize(snapshot: dict[str, Any]) -> SnapshotSummary:
    blocks = [b for seg in snapshot["segments"] for b in seg.get("blocks", [])]
    live = [b for b in blocks if b.get("state") == "active_allocated"]
    entries = [e for trace in snapshot.get("device_traces", []) for e in trace]
    times = [e["time_us"] for e in entries if isinstance(e.get("time_us"), int)]
    metadata = snapshot.get(METADATA_KEY)
    return SnapshotSummary(
        segments=len(snapshot["segments"]),
        live_blocks=len(live),
        live_bytes=sum(int(b.get("requested_size", b.get("size", 0))) for b in live),
        entries_per_device=[len(trace) for trace in snapshot.get("device_traces", [])],
        actions=dict(Counter(str(e["action"]) for e in entries)),
        first_time_us=min(times) if times else None,
        last_time_us=max(times) if times else None,
        metadata=metadata if isinstance(metadata, dict) else {},
    )

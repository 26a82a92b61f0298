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

import contextlib
import io
import pickle
import resource
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kinetoscope._errors import FormatError

METADATA_KEY = "kinetoscope"
# What unpickling may map beyond what the process holds: 1 GiB, plus 64 bytes per pickle byte (real
# snapshots expand 10-30 times: strings and frames are shared through the memo).
_MIN_LOAD_BYTES = 1 << 30
_MEMORY_PER_PICKLE_BYTE = 64
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


@contextlib.contextmanager
def _address_space_limit(extra_bytes: int) -> Iterator[None]:
    """While the block runs, the process may map at most ``extra_bytes`` more than it has mapped now.

    The C unpickler sizes its memo by the largest index a PUT opcode names: a 6 KB file naming
    index 392,729,701 made it allocate and clear 6 GB. Under this limit that allocation fails
    (MemoryError, a refused file) instead of taking the machine's memory. Linux only; elsewhere,
    or when a limit is already set lower, nothing changes.
    """
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        mapped = int(Path("/proc/self/statm").read_text().split()[0]) * resource.getpagesize()
    except (OSError, ValueError, AttributeError):
        yield
        return
    limit = mapped + extra_bytes
    if (soft != resource.RLIM_INFINITY and soft <= limit) or (hard != resource.RLIM_INFINITY and hard < limit):
        yield
        return
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def loads_plain(data: bytes, origin: str) -> Any:
    """Unpickle ``data`` admitting only plain containers and scalars; FormatError names ``origin``.

    The objects may take at most ``_MEMORY_PER_PICKLE_BYTE`` times the pickle's size (plus 1 GiB)."""
    try:
        with _address_space_limit(_MIN_LOAD_BYTES + _MEMORY_PER_PICKLE_BYTE * len(data)):
            return _PlainUnpickler(io.BytesIO(data)).load()
    except _Refused as exc:
        raise FormatError(f"{origin}: refused: {exc}; only plain data is read, code never runs") from exc
    except MemoryError as exc:
        raise FormatError(
            f"{origin}: refused: unpickling it needs far more memory than a snapshot of {len(data):,} bytes can "
            "(an index or a length beyond the file)"
        ) from exc
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError) as exc:
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

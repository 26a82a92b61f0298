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

A file read is then checked before anything uses it (``check_snapshot``): the pickle's memo
lets one list be referenced many times, so a 10 KB file can describe a tree of billions of
entries that readers walk one by one; a snapshot whose tree, counted with every shared part
as often as it is referenced, holds over ``MAX_EXPANDED_ITEMS`` items (plus
``EXPANSION_PER_BYTE`` per pickle byte) or ``MAX_EXPANDED_TEXT_BYTES`` of text (plus
``TEXT_PER_BYTE`` per pickle byte), or refers to itself, is refused. Real snapshots hold
about one item and 11 bytes of text per pickle byte. Every field a reader turns into a
number (addresses, sizes, devices, streams, times, lines) must be an integer within 64 bits
(``time_us`` within what nanoseconds hold), every string valid Unicode (no lone surrogate),
and the containers what PyTorch writes: a FormatError names the file, the place
(``segments[3].blocks[0].size``) and what is wrong.
"""

from __future__ import annotations

import contextlib
import io
import pickle
import resource
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kinetoscope._errors import FormatError

METADATA_KEY = "kinetoscope"
# What unpickling may map beyond what the process holds: 1 GiB, plus 64 bytes per pickle byte (real
# snapshots expand 10-30 times: strings and frames are shared through the memo).
_MIN_LOAD_BYTES = 1 << 30
_MEMORY_PER_PICKLE_BYTE = 64
# The tree a snapshot describes, counted with shared parts as often as they are referenced.
MAX_EXPANDED_ITEMS = 1_000_000
EXPANSION_PER_BYTE = 16
MAX_EXPANDED_TEXT_BYTES = 64 << 20
TEXT_PER_BYTE = 64
_INT64_MAX = (1 << 63) - 1
_TIME_US_MAX = _INT64_MAX // 1000
_CONTAINERS = (dict, list, tuple, set, frozenset)
SNAPSHOT_FORMAT = 1
# Protocol 4 with plain data uses only opcodes PyTorch's MemoryViz.js unpickler understands.
PICKLE_PROTOCOL = 4
ACTIONS = ("alloc", "free_requested", "free_completed", "segment_alloc", "segment_free",
           "segment_map", "segment_unmap", "snapshot", "oom")  # fmt: skip


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
    check_snapshot(snapshot, str(path), data)
    result: dict[str, Any] = snapshot
    return result


def check_snapshot(snapshot: object, origin: str, data: bytes) -> None:
    """FormatError naming ``origin`` unless ``snapshot`` (unpickled from ``data``) is in PyTorch's
    structure with fields readers can use, and describes a bounded tree (see the module's text)."""
    problem = snapshot_problem(snapshot, data)
    if problem:
        raise FormatError(f"{origin}: {problem}")


def snapshot_problem(snapshot: object, data: bytes) -> str | None:
    """What keeps ``snapshot`` (unpickled from ``data``) from being read: the place and the fault, or None.

    One pass over what readers walk (segments, blocks, trace entries; each distinct frames list and
    frame once), counting every shared part each time it is referenced, stopped at the budget."""
    if not isinstance(snapshot, dict):
        return f"not a memory snapshot: expected a dict with 'segments' and 'device_traces', got {_kind(snapshot)}"
    checker = _Checker(len(data))
    try:
        checker.snapshot(snapshot)
    except _TooLargeError as exc:
        return f"refused: {exc}"
    except _FaultError as fault:
        return f"not a memory snapshot: {fault}"
    return None


def structure_problem(snapshot: object) -> str | None:
    """What keeps ``snapshot`` from being PyTorch's snapshot structure with usable fields, or None
    (``snapshot_problem`` of a snapshot given as objects, with a budget of its pickled size)."""
    problem = snapshot_problem(snapshot, dumps_snapshot(snapshot) if isinstance(snapshot, dict) else b"")
    return problem.removeprefix("not a memory snapshot: ") if problem else None


def _children(obj: object) -> Iterator[object]:
    if isinstance(obj, dict):
        for key, value in obj.items():
            yield key
            yield value
    else:
        yield from obj  # type: ignore[misc]


class _FaultError(Exception):
    """One field of a snapshot that readers cannot use (its place and the fault)."""


class _TooLargeError(Exception):
    """The tree a snapshot describes is past the budget."""


_SEGMENT_INTS = ("device", "address", "total_size", "allocated_size", "active_size", "requested_size", "stream")
_BLOCK_INTS = ("address", "size", "requested_size")
_ENTRY_INTS = ("addr", "size", "stream")
_SEGMENT_TEXTS = ("segment_type",)
_BLOCK_TEXTS = ("state",)
_FRAME_TEXTS = ("filename", "name")
_WALKED = ("segments", "device_traces")


class _Checker:
    """Checks the fields readers use and counts the tree they walk against the budget."""

    def __init__(self, size_bytes: int) -> None:
        self.items, self.text = 0, 0
        self.max_items = MAX_EXPANDED_ITEMS + EXPANSION_PER_BYTE * size_bytes
        self.max_text = MAX_EXPANDED_TEXT_BYTES + TEXT_PER_BYTE * size_bytes
        self.size_bytes = size_bytes
        self._frames: dict[int, tuple[int, int]] = {}  # id of a frames list -> (items, text bytes)
        self._frame_items: dict[int, int] = {}  # id of a frame -> its items
        self._frame_text: dict[int, int] = {}  # id of a frame -> its text bytes

    def spend(self, items: int, text: int = 0) -> None:
        self.items += items
        self.text += text
        if self.items > self.max_items or self.text > self.max_text:
            raise _TooLargeError(
                f"the {self.size_bytes:,}-byte pickle shares its parts so often that it describes over "
                f"{self.max_items:,} items or {self.max_text:,} bytes of text (a real snapshot describes about "
                "one item and 11 bytes of text per pickle byte)"
            )

    def snapshot(self, snapshot: dict[Any, Any]) -> None:
        segments = snapshot.get("segments")
        if not isinstance(segments, list):
            raise _FaultError("'segments' is missing or not a list")
        traces = snapshot.get("device_traces", [])
        if not isinstance(traces, list) or not all(isinstance(t, list) for t in traces):
            raise _FaultError("'device_traces' is not a list of lists")
        for index, segment in enumerate(segments):
            self.segment(segment, f"segments[{index}]")
        for device, trace in enumerate(traces):
            for index, entry in enumerate(trace):
                self.entry(entry, f"device_traces[{device}][{index}]")
        rest = {key: value for key, value in snapshot.items() if key not in _WALKED}
        items, text = _expanded(rest, self.max_items - self.items, self.max_text - self.text, "the snapshot")
        self.spend(items, text)

    def segment(self, segment: object, where: str) -> None:
        if not isinstance(segment, dict):
            raise _FaultError(f"{where} is {_kind(segment)}, not a segment (a dict)")
        self.spend(1 + len(segment))
        _integers(segment, _SEGMENT_INTS, where)
        _texts(segment, _SEGMENT_TEXTS, where)
        pool = segment.get("segment_pool_id")
        if isinstance(pool, list | tuple):
            _texts(dict(enumerate(pool)), range(len(pool)), f"{where}.segment_pool_id")
        self.frames(segment.get("frames"), f"{where}.frames")
        blocks = segment.get("blocks", [])
        if not isinstance(blocks, list):
            raise _FaultError(f"{where}.blocks is {_kind(blocks)}, not a list")
        for index, block in enumerate(blocks):
            place = f"{where}.blocks[{index}]"
            if not isinstance(block, dict):
                raise _FaultError(f"{place} is {_kind(block)}, not a block (a dict)")
            self.spend(1 + len(block))
            _integers(block, _BLOCK_INTS, place)
            _texts(block, _BLOCK_TEXTS, place)
            self.frames(block.get("frames"), f"{place}.frames")

    def entry(self, entry: object, where: str) -> None:
        if not isinstance(entry, dict) or entry.get("action") not in ACTIONS:
            raise _FaultError(f"{where} is not a trace entry with a known 'action'")
        self.spend(1 + len(entry))
        _integers(entry, _ENTRY_INTS, where)
        _integers(entry, ("time_us",), where, _TIME_US_MAX)
        self.frames(entry.get("frames"), f"{where}.frames")

    def frames(self, frames: object, where: str) -> None:
        """A frames list: checked the first time, counted every time."""
        if frames is None:
            return
        known = self._frames.get(id(frames))
        if known is None:
            known = self._frames[id(frames)] = self._frames_size(frames, where)
        self.spend(*known)

    def _frames_size(self, frames: object, where: str) -> tuple[int, int]:
        if not isinstance(frames, list):
            raise _FaultError(f"{where} is {_kind(frames)}, not a list of frames")
        ids = list(map(id, frames))
        if not self._frame_items.keys() >= set(ids):  # real snapshots share a few hundred frames
            for index, frame in enumerate(frames):
                if id(frame) not in self._frame_items:
                    items, text = _frame_size(frame, f"{where}[{index}]")
                    self._frame_items[id(frame)], self._frame_text[id(frame)] = items, text
        return 1 + sum(map(self._frame_items.__getitem__, ids)), sum(map(self._frame_text.__getitem__, ids))


def _frame_size(frame: object, where: str) -> tuple[int, int]:
    if not isinstance(frame, dict):
        raise _FaultError(f"{where} is {_kind(frame)}, not a frame (a dict)")
    _integers(frame, ("line",), where)
    _texts(frame, _FRAME_TEXTS, where)
    return 1 + len(frame), sum(len(value) for value in frame.values() if isinstance(value, str))


def _expanded(root: object, max_items: int, max_text: int, where: str) -> tuple[int, int]:
    """(items, text bytes) of the tree ``root`` describes, shared parts counted each time, stopping as
    soon as either passes its maximum; a container that holds itself, or a string that is not
    valid Unicode, is refused. Linear in the distinct objects."""
    done: dict[int, tuple[int, int]] = {}
    active = {id(root)}
    stack: list[tuple[object, Iterator[object], list[int]]] = [(root, _children(root), [1, 0])]
    total = [0, 0]
    while stack:
        obj, children, counts = stack[-1]
        for child in children:
            if isinstance(child, _CONTAINERS):
                known = done.get(id(child))
                if known is None:
                    if id(child) in active:
                        raise _FaultError("it contains itself (a container that refers back to one holding it)")
                    active.add(id(child))
                    stack.append((child, _children(child), [1, 0]))
                    break
                counts[0] += known[0]
                counts[1] += known[1]
            else:
                counts[0] += 1
                if isinstance(child, str | bytes):
                    counts[1] += len(child)
                    _unicode(child, where)
            if counts[0] > max_items or counts[1] > max_text:
                return counts[0], counts[1]
        else:
            stack.pop()
            active.discard(id(obj))
            done[id(obj)] = (counts[0], counts[1])
            parent = stack[-1][2] if stack else total
            parent[0] += counts[0]
            parent[1] += counts[1]
            if parent[0] > max_items or parent[1] > max_text:
                return parent[0], parent[1]
    return total[0], total[1]


def _kind(value: object) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:40]}{'...' if len(text) > 40 else ''}"


def _integers(holder: dict[Any, Any], names: tuple[str, ...], where: str, limit: int = _INT64_MAX) -> None:
    """Each ``holder[name]`` is absent, None or an integer within +-``limit``."""
    for name in names:
        value = holder.get(name)
        if value is None or (type(value) is int and -limit <= value <= limit):
            continue
        if type(value) is not int:
            raise _FaultError(f"{where}.{name} is {_kind(value)}, not an integer")
        raise _FaultError(f"{where}.{name} is {value}, beyond the {limit.bit_length()}-bit range it must fit")


def _texts(holder: dict[Any, Any], names: Iterable[Any], where: str) -> None:
    """Each string ``holder[name]`` (others are read as their ``str``) is valid Unicode."""
    for name in names:
        value = holder.get(name)
        if isinstance(value, str):
            _unicode(value, f"{where}.{name}")


def _unicode(value: str | bytes, where: str) -> None:
    """A lone surrogate (which pickles carry) cannot be written as UTF-8: refused."""
    if isinstance(value, str) and not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            problem = f"{where} holds a string that is not valid Unicode: {value[:40]!r} ({exc.reason})"
            raise _FaultError(problem) from None


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

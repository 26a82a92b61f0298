"""Allocations from memory snapshots (``memory_snapshot_rank<N>.pickle``), on the trace clock.

A snapshot's ``device_traces`` list every allocation and free recorded while history was on
(``time_us``: CLOCK_REALTIME µs, the clock of ``trace.json``). An allocation is paired with
the next ``free_completed`` of its address on its device (``free_requested`` when the
free never completed within the recording). Blocks allocated before recording began get
``alloc_ts_ns`` -1: those still allocated at export (from the snapshot's segments) and those
freed during the recording (a free with no recorded allocation), which count toward the peak
until their free. Each allocation joins the allocator event of ``trace.json`` (a ``[memory]`` instant) with
the same address and size closest in time, when one lies within ``JOIN_WINDOW_NS``. Snapshots
are read with the restricted unpickler of ``format.session_files.snapshot``: no code in them ever runs.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from kinetoscope.dataset.schema import ALLOCATIONS
from kinetoscope.format.session_files.snapshot import METADATA_KEY, load_snapshot
from kinetoscope.ingest.rows.batch import Values
from kinetoscope.ingest.rows.nesting import FrameTree
from kinetoscope.model import snapshot_frames
from kinetoscope.model.scalars import NO_ID, to_int

JOIN_WINDOW_NS = 1_000_000
SNAPSHOT_SUFFIX = ".pickle"


@dataclass
class MemoryEvents:
    """Allocator events of the trace: (addr, bytes) -> sorted [(ts_ns, event id)].

    Batches of events are kept as they come (``extend``) and indexed on the first ``match``:
    only sessions with a memory snapshot ever match, and most have none.
    """

    _by_block: dict[tuple[int, int], list[tuple[int, int]]] = field(default_factory=lambda: defaultdict(list))
    _pending: list[tuple[Values, ...]] = field(default_factory=list)

    def add(self, addr: int, size: int, ts_ns: int, event_id: int) -> None:
        self._by_block[(addr, size)].append((ts_ns, event_id))

    def extend(self, addrs: Values, sizes: Values, ts_ns: Values, ids: Values) -> None:
        """Events whose address and size are still as the trace spells them (``to_int`` reads them),
        or in 64-bit arrays, as the times and ids may be."""
        if len(addrs):
            self._pending.append((addrs, sizes, ts_ns, ids))

    @property
    def by_block(self) -> dict[tuple[int, int], list[tuple[int, int]]]:
        for pending in self._pending:
            addrs, sizes, times, ids = map(_listed, pending)
            for addr, size, ts_ns, event_id in zip(addrs, sizes, times, ids, strict=True):
                self.add(to_int(addr), to_int(size), int(ts_ns), int(event_id))
        self._pending.clear()
        return self._by_block

    def match(self, addr: int, size: int, ts_ns: int) -> int:
        candidates = self.by_block.get((addr, size))
        if not candidates or ts_ns < 0:
            return NO_ID
        candidates.sort()
        at = bisect.bisect_left(candidates, (ts_ns, NO_ID))
        near = [c for c in candidates[max(at - 1, 0) : at + 1] if abs(c[0] - ts_ns) <= JOIN_WINDOW_NS]
        return min(near, key=lambda c: abs(c[0] - ts_ns))[1] if near else NO_ID


def _listed(values: Values) -> list[Any]:
    """``values`` as a list of Python objects (an array's as ``int``)."""
    return values.tolist() if isinstance(values, np.ndarray) else list(values)


def snapshot_files(session: Path) -> list[Path]:
    return sorted(p for p in session.glob(f"*{SNAPSHOT_SUFFIX}") if p.is_file())


def frame_labels(frames: Any) -> list[str]:
    """``file(line): name`` labels, outermost first (snapshots list the innermost first), without the
    unwinder's and allocator's frames (``model.snapshot_frames``)."""
    if not isinstance(frames, list):
        return []
    return [
        f"{f.get('filename', '')}({f.get('line', -1)}): {f.get('name', '')}"
        for f in reversed(snapshot_frames.meaningful(frames))
    ]


@dataclass
class _Row:
    addr: int
    size: int
    alloc_ns: int
    free_ns: int
    device: int
    stack: int


@dataclass
class _Blocks:
    """One device's blocks as its trace is read, in time order."""

    device: int
    rows: list[_Row] = field(default_factory=list)
    open: dict[int, _Row] = field(default_factory=dict)
    earlier: dict[int, _Row] = field(default_factory=dict)  # from before recording: free requested, not completed

    def free(self, addr: int, size: int, ts_ns: int, completed: bool) -> None:
        if addr in self.open:
            self.open[addr].free_ns = ts_ns  # provisional until the free completes
            if completed:
                del self.open[addr]
            return
        if addr in self.earlier:
            if completed:
                self.earlier.pop(addr).free_ns = ts_ns
            return
        row = _Row(addr, size, NO_ID, ts_ns, self.device, NO_ID)  # allocated before recording began
        self.rows.append(row)
        if not completed:
            self.earlier[addr] = row


def _device_rows(trace: list[dict[str, Any]], device: int, tree: FrameTree) -> list[_Row]:
    """One device's blocks from its trace. A free of a block with no recorded allocation (allocated
    before recording began, or before the trace's ring buffer wrapped) is a block that was live from
    the start (``alloc_ts_ns`` -1) until that free: it counts toward the peak until then."""
    blocks = _Blocks(device)
    for entry in sorted(trace, key=lambda e: int(e.get("time_us", 0) or 0)):
        action, addr = entry.get("action"), int(entry.get("addr", 0))
        ts_ns = int(entry.get("time_us", 0) or 0) * 1000 if entry.get("time_us") is not None else NO_ID
        if action == "alloc":
            stack = tree.path(frame_labels(entry.get("frames")))
            row = _Row(addr, int(entry.get("size", 0)), ts_ns, NO_ID, device, stack)
            blocks.open[addr] = row
            blocks.rows.append(row)
        elif action in ("free_requested", "free_completed"):
            blocks.free(addr, int(entry.get("size", 0)), ts_ns, action == "free_completed")
    return blocks.rows


def _preexisting(snapshot: dict[str, Any], recorded: set[tuple[int, int]], tree: FrameTree, host: bool) -> list[_Row]:
    rows = []
    for segment in snapshot.get("segments", []):
        device = NO_ID if host else int(segment.get("device", 0))
        for block in segment.get("blocks", []):
            addr = int(block.get("address", 0))
            if block.get("state") == "active_allocated" and (device, addr) not in recorded:
                size = int(block.get("requested_size", block.get("size", 0)))
                rows.append(_Row(addr, size, NO_ID, NO_ID, device, tree.path(frame_labels(block.get("frames")))))
    return rows


def is_host(snapshot: dict[str, Any]) -> bool:
    """Whether the snapshot is kinetoscope's of the CPU allocator (its blocks are host memory)."""
    found = snapshot.get(METADATA_KEY)
    return isinstance(found, dict) and str(found.get("device_kind", "")) == "cpu"


def allocation_table(
    path: Path, session: str, tree: FrameTree, memory: MemoryEvents, id_base: int, *,
    snapshot: dict[str, Any] | None = None,
) -> pa.Table:
    """The ``allocations`` rows of one snapshot file (read from ``path`` unless given loaded); its frames
    are added to ``tree``."""
    snapshot = load_snapshot(path) if snapshot is None else snapshot
    host = is_host(snapshot)
    rows: list[_Row] = []
    for index, trace in enumerate(snapshot.get("device_traces", [])):
        rows += _device_rows(trace, NO_ID if host else index, tree)
    live = {(r.device, r.addr) for r in rows if r.free_ns == NO_ID}
    rows += _preexisting(snapshot, live, tree, host)
    return pa.table(
        {
            "session": [session] * len(rows),
            "addr": [r.addr for r in rows],
            "size_bytes": [r.size for r in rows],
            "alloc_ts_ns": [r.alloc_ns for r in rows],
            "free_ts_ns": [r.free_ns for r in rows],
            "device": [r.device for r in rows],
            "stack_id": [r.stack + id_base if r.stack >= 0 else NO_ID for r in rows],
            "event_id": [memory.match(r.addr, r.size, r.alloc_ns) for r in rows],
        },
        schema=ALLOCATIONS.file_schema(),
    )

"""Edges between events (the ``flows`` table) and the step each event belongs to.

* framework -> runtime: a runtime call carries the ``External id`` of the op that made it. Where
  it carries none, its own correlation id (some Kineto versions write that), or one no op has,
  the call is bound to the op it runs inside (``model.ops``), as the enclosing op made it.
* runtime -> device: device work carries the ``correlation`` id of the call that launched
  it (the same id Kineto's ``ac2g`` flow events use, so those are not read again).
* framework -> device, only when the launching runtime call is absent from the trace.
* ``fwdbwd`` and any other flow events: both ends are bound to the innermost slice open at
  the flow's time on its thread (``bp: "e"`` or a start), or to the next slice on that
  thread (a finish without ``bp``), as trace viewers do.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from kinetoscope.ingest.rows.batch import DEVICE_TRACK_BIT, FlowPoint
from kinetoscope.model import flows, kinds, ops
from kinetoscope.model.scalars import NO_ID

# The flow kinds (``model.flows``).
FRAMEWORK_RUNTIME, RUNTIME_DEVICE, RUNTIME_SYNC = flows.FRAMEWORK_RUNTIME, flows.RUNTIME_DEVICE, flows.RUNTIME_SYNC
RUNTIME_RUNTIME, FRAMEWORK_DEVICE, FWD_BWD = flows.RUNTIME_RUNTIME, flows.FRAMEWORK_DEVICE, flows.FWD_BWD
_FW, _RT, _DEV = (kinds.LAYER_CODES[n] for n in kinds.LAYERS)
# How an edge was found (the ``flows.found_by`` column).
BY_EXTERNAL_ID, BY_CORRELATION = "external_id", "correlation"
BY_ENCLOSING_OP, BY_FLOW_EVENT = "enclosing_op", "flow_event"
_CALL_KINDS = np.asarray([kinds.KIND_CODES[kinds.RUNTIME_CALL], kinds.KIND_CODES[kinds.DRIVER]])
_SYNC = kinds.KIND_CODES[kinds.SYNC]
_PHASE_ORDER = {"s": 0, "t": 1, "f": 2}


@dataclass
class Edges:
    """Flow edges as row positions (not yet event ids), their kinds and how they were found."""

    src: list[np.ndarray]
    dst: list[np.ndarray]
    kind: list[str]  # one kind per (src, dst) array pair
    found_by: list[str]  # likewise

    def add(self, src: np.ndarray, dst: np.ndarray, kind: str, found_by: str) -> None:
        if len(src):
            self.src.append(src)
            self.dst.append(dst)
            self.kind.append(kind)
            self.found_by.append(found_by)

    def count(self) -> int:
        return sum(len(a) for a in self.src)


def _match(key_from: np.ndarray, pos_from: np.ndarray, key_to: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(position in ``from``, index into ``key_to``) for each ``key_to`` found among ``key_from`` (first wins)."""
    unique, first = np.unique(key_from, return_index=True)
    if not len(unique):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    at = np.minimum(np.searchsorted(unique, key_to), len(unique) - 1)
    found = np.flatnonzero(unique[at] == key_to)
    return pos_from[first[at[found]]], found


def launch_edges(keys: dict[str, np.ndarray]) -> tuple[Edges, np.ndarray]:
    """Edges by correlation id from a runtime or driver call to the device work, the
    synchronization and the later calls it caused, and for each row its launching call (or -1).

    Of the calls that share a correlation id (an MTIA host call and its device-side runtime
    call), the first in the trace starts the flow and the others end it."""
    layer, kind, correlation = keys["layer"], keys["kind"], keys["correlation"]
    edges = Edges([], [], [], [])
    launcher = np.full(len(layer), NO_ID, dtype=ops.position_dtype(len(layer)))
    calls = np.flatnonzero(np.isin(kind, _CALL_KINDS) & (correlation != NO_ID))
    src, found = _match(correlation[calls], calls, correlation[calls])
    later = src != calls[found]
    edges.add(src[later], calls[found][later], RUNTIME_RUNTIME, BY_CORRELATION)
    launcher[calls[found][later]] = src[later]
    for target, edge_kind in ((layer == _DEV, RUNTIME_DEVICE), (kind == _SYNC, RUNTIME_SYNC)):
        rows = np.flatnonzero(target & (correlation != NO_ID))
        src, found = _match(correlation[calls], calls, correlation[rows])
        edges.add(src, rows[found], edge_kind, BY_CORRELATION)
        launcher[rows[found]] = src
    return edges, launcher


def op_edges(edges: Edges, keys: dict[str, np.ndarray], op: np.ndarray, launcher: np.ndarray) -> None:
    """Framework -> runtime edges (External id, else the enclosing op), and framework -> device edges
    for device work whose launching call is absent from the trace."""
    layer, external, correlation = keys["layer"], keys["external_id"], keys["correlation"]
    fw = np.flatnonzero((layer == _FW) & (external != NO_ID) & ~keys["is_python"])
    rt = np.flatnonzero((layer == _RT) & (external != NO_ID) & (external != correlation))
    src, found = _match(external[fw], fw, external[rt])
    edges.add(src, rt[found], FRAMEWORK_RUNTIME, BY_EXTERNAL_ID)
    bound = np.zeros(len(layer), dtype=bool)
    bound[rt[found]] = True
    rest = np.flatnonzero((layer == _RT) & ~bound & (op >= 0) & (keys["kind"] != kinds.KIND_CODES[kinds.ALLOCATION]))
    edges.add(op[rest], rest, FRAMEWORK_RUNTIME, BY_ENCLOSING_OP)
    orphan = np.flatnonzero((layer == _DEV) & (external != NO_ID) & (launcher == NO_ID))
    src, found = _match(external[fw], fw, external[orphan])
    edges.add(src, orphan[found], FRAMEWORK_DEVICE, BY_EXTERNAL_ID)


class SliceFinder:
    """Finds the slice a flow end binds to, using the nesting walk's sorted order."""

    def __init__(
        self, track: np.ndarray, ts_ns: np.ndarray, end_ns: np.ndarray, parent: np.ndarray, order: np.ndarray
    ) -> None:
        self.order = order
        self.sorted_track = track[order]
        self.sorted_ts = ts_ns[order]
        self.end = end_ns
        self.parent = parent

    def _segment(self, key: int) -> tuple[int, int]:
        lo = int(np.searchsorted(self.sorted_track, key, "left"))
        return lo, int(np.searchsorted(self.sorted_track, key, "right"))

    def enclosing(self, key: int, ts_ns: int) -> int:
        lo, hi = self._segment(key)
        at = lo + int(np.searchsorted(self.sorted_ts[lo:hi], ts_ns, "right")) - 1
        pos = int(self.order[at]) if at >= lo else NO_ID
        while pos != NO_ID and self.end[pos] < ts_ns:
            pos = int(self.parent[pos])
        return pos

    def next_slice(self, key: int, ts_ns: int) -> int:
        lo, hi = self._segment(key)
        at = lo + int(np.searchsorted(self.sorted_ts[lo:hi], ts_ns, "left"))
        return int(self.order[at]) if at < hi else NO_ID


def host_track(pid: int, tid: int) -> int:
    return ((pid & 0x3FFFFFFF) << 32) | (tid & 0xFFFFFFFF)


def device_track(device: int, stream: int) -> int:
    return DEVICE_TRACK_BIT | ((device & 0x3FFFFFFF) << 32) | (stream & 0xFFFFFFFF)


def flow_event_edges(points: list[FlowPoint], finder: SliceFinder, edges: Edges) -> int:
    """Bind flow events to slices and add their edges; returns how many ends found no slice."""
    groups: dict[tuple[str, int], list[FlowPoint]] = defaultdict(list)
    for point in points:
        groups[(point[1], point[0])].append(point)
    unbound = 0
    by_kind: dict[str, tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    for (category, _), group in groups.items():
        group.sort(key=lambda p: (_PHASE_ORDER.get(p[3], 1), p[4]))
        bound = [_bind(p, finder) for p in group]
        unbound += sum(b == NO_ID for b in bound)
        kind = FWD_BWD if category == kinds.FWD_BWD_FLOW_CATEGORY else (group[0][2] or category)
        for a, b in pairwise(bound):
            if NO_ID not in (a, b) and a != b:
                by_kind[kind][0].append(a)
                by_kind[kind][1].append(b)
    for kind, (src, dst) in by_kind.items():
        edges.add(np.asarray(src, np.int64), np.asarray(dst, np.int64), kind, BY_FLOW_EVENT)
    return unbound


def _bind(point: FlowPoint, finder: SliceFinder) -> int:
    _, _, _, phase, ts_ns, pid, tid, enclosing = point
    for key in (host_track(pid, tid), device_track(pid, tid)):
        pos = finder.next_slice(key, ts_ns) if phase == "f" and not enclosing else finder.enclosing(key, ts_ns)
        if pos != NO_ID:
            return pos
    return NO_ID


def steps(
    ts_ns: np.ndarray, layer: np.ndarray, launcher: np.ndarray, step_marks: list[tuple[int, int, int]]
) -> np.ndarray:
    """Step number of each row: host rows by time in ``ProfilerStep#N``; device rows by their launcher."""
    out = np.full(len(ts_ns), NO_ID, dtype=np.int32)
    if not step_marks:
        return out
    marks = sorted(step_marks)
    starts = np.asarray([m[0] for m in marks], np.int64)
    ends = np.asarray([m[1] for m in marks], np.int64)
    numbers = np.asarray([m[2] for m in marks], np.int32)
    at = np.searchsorted(starts, ts_ns, "right") - 1
    inside = (at >= 0) & (ts_ns < ends[np.maximum(at, 0)])
    out[inside] = numbers[at[inside]]
    launched = (layer == _DEV) & (launcher != NO_ID)
    out[launched] = out[launcher[launched]]
    return out

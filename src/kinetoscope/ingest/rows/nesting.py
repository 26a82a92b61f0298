"""Nesting of events on their tracks (depth, parent) and the Python stack tree (``frames``).

A track is one host thread (pid, tid) or one device stream (device, stream). Events on a
track are walked in start order, outer events first, with a stack of the events still open:
an event's parent is the innermost open event that contains it. An event that starts inside
another but ends after it (overlapping device work, clock noise) is not nested in it; it is
counted as an overlap and placed beside it.

Python frames (``python_function`` events) nest the same way; each distinct path of frames
from the root is one node of the frame tree, and every event records the innermost frame
open around it (its ``stack_id``).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

import numpy as np

from kinetoscope.model.ops import position_dtype
from kinetoscope.model.scalars import NO_ID

_FRAME_RE = re.compile(r"^(?P<file>.*)\((?P<line>\d+)\): (?P<func>.*)$")


@dataclass
class FrameTree:
    """Distinct frame paths: node i has ``parent[i]`` (-1 at the root) and a name, file and line."""

    parent: list[int] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    file: list[str] = field(default_factory=list)
    line: list[int] = field(default_factory=list)
    _index: dict[tuple[int, str], int] = field(default_factory=dict)

    def child(self, parent: int, label: str) -> int:
        """The node for frame ``label`` (``file(line): func``) called from node ``parent``."""
        key = (parent, label)
        node = self._index.get(key)
        if node is None:
            node = len(self.parent)
            self._index[key] = node
            match = _FRAME_RE.match(label)
            self.parent.append(parent)
            self.name.append(match.group("func") if match else label)
            self.file.append(match.group("file") if match else "")
            self.line.append(int(match.group("line")) if match else -1)
        return node

    def path(self, labels_root_first: list[str], parent: int = NO_ID) -> int:
        """The node of a whole call path given from the outermost frame to the innermost."""
        node = parent
        for label in labels_root_first:
            node = self.child(node, label.strip())
        return node

    def __len__(self) -> int:
        return len(self.parent)


def legacy_call_stack(text: str) -> list[str]:
    """Frames of a legacy ``Call stack`` arg (innermost first, ``;``-separated), outermost first."""
    return [frame for frame in reversed(text.split(";")) if frame.strip()]


@dataclass
class Nesting:
    """Per-row results of the walk, in row order."""

    depth: np.ndarray  # int32
    parent: np.ndarray  # row position of the parent, -1 at the top (int32 where the rows fit: ``position_dtype``)
    stack_node: np.ndarray  # frame tree node, -1 if none (likewise)
    order: np.ndarray  # row positions sorted by (track, start, longest first), int32 where the rows fit
    overlaps: int


def nest(
    track: np.ndarray,
    ts_ns: np.ndarray,
    end_ns: np.ndarray,
    *,
    python_names: dict[int, str],
    call_stacks: dict[int, str],
    frames: FrameTree,
) -> Nesting:
    """Nest every track; ``python_names`` and ``call_stacks`` are keyed by row position.

    Tracks whose events nest properly (the rule on host threads, and on most streams) are
    solved with array operations; a track with overlapping events is walked one event at a time.
    """
    count = len(track)
    # stable: equal rows stay in row order; held as int32 where the rows fit (half of lexsort's int64)
    order = np.lexsort((ts_ns - end_ns, ts_ns, track)).astype(position_dtype(count), copy=False)
    depth = np.zeros(count, dtype=np.int32)
    parent = np.full(count, NO_ID, dtype=position_dtype(count))
    node_of = np.full(count, NO_ID, dtype=position_dtype(count))
    walked: list[int] = []
    nested = np.zeros(count, dtype=bool)
    for start, stop in _segments(track[order]):
        rows = order[start:stop]
        solved = _nest_segment(ts_ns[rows], end_ns[rows])
        if solved is None:
            walked += rows.tolist()
            continue
        depth[rows] = solved[0]
        parent[rows] = np.where(solved[1] >= 0, rows[np.maximum(solved[1], 0)], NO_ID)
        nested[rows] = True
    _frame_nodes(order[nested[order]], depth, parent, node_of, (python_names, call_stacks, frames))
    overlaps = 0
    if walked:
        overlaps = walk(
            walked,
            (track.tolist(), ts_ns.tolist(), end_ns.tolist()),
            (python_names, call_stacks, frames),
            (depth, parent, node_of),
        )
    return Nesting(depth, parent, node_of, order, overlaps)


def _segments(sorted_track: np.ndarray) -> list[tuple[int, int]]:
    """(start, stop) of each run of equal values in ``sorted_track``."""
    if not len(sorted_track):
        return []
    cuts = (np.flatnonzero(sorted_track[1:] != sorted_track[:-1]) + 1).tolist()
    starts = [0, *cuts]
    return list(zip(starts, [*cuts, len(sorted_track)], strict=True))


def _nest_segment(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """(depth, parent index) of one track's events in start order, or None if they do not nest.

    With proper nesting an event's ancestors are exactly the earlier events still open at its
    start (half-open intervals, so an instant at a slice's end is not inside it).
    """
    count = len(starts)
    still_open_before = np.arange(count) - np.searchsorted(np.sort(ends), starts, side="right")
    zero = ends == starts
    if zero.any():  # instants at a start sort after the slices starting there: not yet counted as ended
        zero_starts = starts[zero]
        first = np.searchsorted(zero_starts, starts, "left")
        at_start = np.searchsorted(zero_starts, starts, "right") - first
        before = np.where(zero, np.cumsum(zero) - 1 - first, 0)
        still_open_before += at_start - before
    depth = still_open_before
    if (depth < 0).any():
        return None
    parent = np.full(count, NO_ID, dtype=np.int64)
    by_depth = np.argsort(depth, kind="stable")
    levels = np.split(by_depth, np.flatnonzero(np.diff(depth[by_depth])) + 1)
    for upper, lower in itertools.pairwise(levels):
        if depth[lower[0]] != depth[upper[0]] + 1:
            return None
        at = np.searchsorted(upper, lower) - 1
        if (at < 0).any():
            return None
        parent[lower] = upper[at]
    has = parent >= 0
    if not ((starts[parent[has]] <= starts[has]).all() and (ends[has] <= ends[parent[has]]).all()):
        return None
    return depth.astype(np.int32), parent


def _frame_nodes(
    rows: np.ndarray,
    depth: np.ndarray,
    parent: np.ndarray,
    node_of: np.ndarray,
    stacks: tuple[dict[int, str], dict[int, str], FrameTree],
) -> None:
    """Innermost frame of each of ``rows`` (in start order), level by level from the outermost."""
    python_names, call_stacks, frames = stacks
    if not len(rows) or not (python_names or call_stacks):
        return
    for level in range(int(depth[rows].max()) + 1):
        at_level = rows[depth[rows] == level]
        above = parent[at_level]
        node_of[at_level] = np.where(above >= 0, node_of[np.maximum(above, 0)], NO_ID)
        for row in at_level.tolist():
            if row in python_names:
                node_of[row] = frames.child(int(node_of[row]), python_names[row])
            elif row in call_stacks:
                node_of[row] = frames.path(legacy_call_stack(call_stacks[row]))


def walk(
    order: list[int],
    spans: tuple[list[int], list[int], list[int]],
    stacks: tuple[dict[int, str], dict[int, str], FrameTree],
    out: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> int:
    track, ts, end = spans
    python_names, call_stacks, frames = stacks
    depth_out, parent_out, node_out = out
    depths = [0] * len(track)
    parents = [NO_ID] * len(track)
    nodes = [NO_ID] * len(track)
    open_end: list[int] = []
    open_pos: list[int] = []
    open_node: list[int] = []
    current = None
    overlaps = 0
    for pos in order:
        if track[pos] != current:
            current = track[pos]
            del open_end[:], open_pos[:], open_node[:]
        start, stop = ts[pos], end[pos]
        while open_end and open_end[-1] <= start:
            del open_end[-1], open_pos[-1], open_node[-1]
        while open_end and open_end[-1] < stop:  # started inside, ends after: not nested
            overlaps += 1
            del open_end[-1], open_pos[-1], open_node[-1]
        node = open_node[-1] if open_node else NO_ID
        if pos in python_names:
            node = frames.child(node, python_names[pos])
        elif pos in call_stacks:
            node = frames.path(legacy_call_stack(call_stacks[pos]))
        depths[pos] = len(open_end)
        parents[pos] = open_pos[-1] if open_pos else NO_ID
        nodes[pos] = node
        open_end.append(stop)
        open_pos.append(pos)
        open_node.append(node)
    depth_out[order] = [depths[p] for p in order]
    parent_out[order] = [parents[p] for p in order]
    node_out[order] = [nodes[p] for p in order]
    return overlaps

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

import re
from dataclasses import dataclass, field

import numpy as np

from kinetoscope.ingest.columns import NO_ID

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
    parent: np.ndarray  # int64 row position of the parent, -1 at the top
    stack_node: np.ndarray  # int64 frame tree node, -1 if none
    order: np.ndarray  # row positions sorted by (track, start, longest first)
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
    """Walk every track once; ``python_names`` and ``call_stacks`` are keyed by row position."""
    count = len(track)
    order = np.lexsort((np.arange(count), ts_ns - end_ns, ts_ns, track))
    depth = np.zeros(count, dtype=np.int32)
    parent = np.full(count, NO_ID, dtype=np.int64)
    node_of = np.full(count, NO_ID, dtype=np.int64)
    overlaps = _walk(
        order.tolist(),
        (track.tolist(), ts_ns.tolist(), end_ns.tolist()),
        (python_names, call_stacks, frames),
        (depth, parent, node_of),
    )
    return Nesting(depth, parent, node_of, order, overlaps)


def _walk(
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
    depth_out[:] = depths
    parent_out[:] = parents
    node_out[:] = nodes
    return overlaps

"""The op tree over a session's nested rows: each event's nearest framework op, and self time.

Self time follows torch's ``key_averages``: an op's (or annotation's, or runtime call's) time
minus that of its nearest op-tree descendants, whatever Python frames sit between them. Python
frames (``with_stack=True``) never take time from the ops they contain, so self time is the
same with and without stacks. A row outside the op tree (a Python frame, a device row) loses
the time of its direct children only. Works on whole columns (numpy), row positions in, row
positions out.

``repeats`` is torch's ``_remove_dup_nodes``: a row of the op tree whose nearest op-tree ancestor
has the same name and no other op-tree child (runtime calls and annotations count as children)
is folded into that ancestor, which keeps its self time; ``key_averages`` then counts one call.
"""

from __future__ import annotations

import numpy as np

from kinetoscope.model import kinds
from kinetoscope.model.scalars import NO_ID

KIND_CODES = kinds.KIND_CODES
OP_TREE_CODES = np.asarray([KIND_CODES[k] for k in kinds.OP_TREE_KINDS], dtype=np.int64)
OP_CODES = np.asarray([KIND_CODES[k] for k in kinds.OP_KINDS], dtype=np.int64)


def position_dtype(count: int) -> type[np.signedinteger]:
    """The narrower of int32 and int64 that holds every row position of ``count`` rows, and -1: half
    the bytes of int64 for a session's whole columns of positions (parents, ops, launchers, tracks)."""
    return np.int32 if count <= np.iinfo(np.int32).max else np.int64


def nearest(parent: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Row position of each row's nearest proper ancestor (through ``parent``) with ``wanted`` set; -1 if none.
    In int32 where ``parent`` is (``position_dtype``), else in int64."""
    up: np.ndarray = parent.astype(np.int32 if parent.dtype == np.int32 else np.int64, copy=True)
    pending = np.flatnonzero(up >= 0)
    pending = pending[~wanted[up[pending]]]
    while len(pending):
        up[pending] = parent[up[pending]]
        pending = pending[up[pending] >= 0]
        pending = pending[~wanted[up[pending]]]
    return up


def in_op_tree(kind: np.ndarray) -> np.ndarray:
    """Whether each row (kind codes) is a node of torch's op tree: ops, annotations, host collectives, runtime calls."""
    return np.isin(kind, OP_TREE_CODES)


def self_ns(dur_ns: np.ndarray, parent: np.ndarray, kind: np.ndarray) -> np.ndarray:
    """Self time of every row (never below 0 where children overlap their parent's end)."""
    in_tree = in_op_tree(kind)
    tree_parent = nearest(parent, in_tree)
    out = dur_ns.astype(np.int64, copy=True)
    child = in_tree & (tree_parent >= 0)
    np.subtract.at(out, tree_parent[child], dur_ns[child])
    del child, tree_parent
    plain = np.flatnonzero((parent >= 0) & ~in_tree[np.maximum(parent, 0)])  # children of rows outside the tree
    np.subtract.at(out, parent[plain], dur_ns[plain])
    return np.maximum(out, 0, out=out)


def op_of(parent: np.ndarray, kind: np.ndarray, launcher: np.ndarray) -> np.ndarray:
    """Each row's nearest enclosing framework op or annotation (Python frames skipped); device rows
    take the op of the runtime call that launched them. -1 where there is none."""
    found = nearest(parent, np.isin(kind, OP_CODES))
    launched = (found < 0) & (launcher >= 0)
    found[launched] = found[launcher[launched]]
    return np.where(found >= 0, found, NO_ID)


def repeats(parent: np.ndarray, name: np.ndarray, in_tree: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(folded, keeper): which rows torch's ``_remove_dup_nodes`` removes, and for each folded row the
    kept ancestor that takes its self time (-1 elsewhere). ``name`` holds equal codes for equal names;
    ``parent`` is each row's enclosing row (-1 at the top), ``in_tree`` the op-tree rows (``in_op_tree``).

    Evaluated on the tree as recorded, which is the same as torch's repeated passes: a row folds when
    its op-tree parent has its name and exactly one op-tree child (itself), Python frames skipped."""
    up = nearest(parent, in_tree)
    del parent  # where the caller handed it over, it goes now
    child = np.flatnonzero(in_tree & (up >= 0))
    above = up[child]
    only = np.bincount(above)[above] == 1  # children per parent, counted up to the last parent only
    rows = child[(name[above] == name[child]) & only]
    folded = np.zeros(len(name), dtype=bool)
    folded[rows] = True
    keeper = np.full(len(name), -1, dtype=np.int64)
    top = up[rows]
    while len(climbing := np.flatnonzero(folded[top])):  # up through folded ancestors, all rows at once
        top[climbing] = up[top[climbing]]
    keeper[rows] = top
    return folded, keeper


def folded_self_ns(self_time_ns: np.ndarray, folded: np.ndarray, keeper: np.ndarray) -> np.ndarray:
    """``self_time_ns`` with each folded row's self time moved onto its keeper (torch's self time after
    ``_remove_dup_nodes``: the keeper loses only its grandchildren's time)."""
    out = self_time_ns.astype(np.int64, copy=True)
    rows = np.flatnonzero(folded)
    np.add.at(out, keeper[rows], self_time_ns[rows])
    out[rows] = 0
    return out


STEP_KEY = "ProfilerStep*"


def averages_key(name: str, step_prefix: str = kinds.STEP_PREFIX) -> str:
    """The name ``key_averages`` groups a row under: every ``ProfilerStep#N`` is ``ProfilerStep*``."""
    return STEP_KEY if name.startswith(step_prefix) else name

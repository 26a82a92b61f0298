"""The op tree over a session's nested rows: each event's nearest framework op, and self time.

Self time follows torch's ``key_averages``: an op's (or annotation's, or runtime call's) time
minus that of its nearest op-tree descendants, whatever Python frames sit between them. Python
frames (``with_stack=True``) never take time from the ops they contain, so self time is the
same with and without stacks. A row outside the op tree (a Python frame, a device row) loses
the time of its direct children only. Works on whole columns (numpy), row positions in, row
positions out.
"""

from __future__ import annotations

import numpy as np

from kinetoscope.model import kinds
from kinetoscope.model.scalars import NO_ID

KIND_CODES = kinds.KIND_CODES
OP_TREE_CODES = np.asarray([KIND_CODES[k] for k in kinds.OP_TREE_KINDS], dtype=np.int64)
OP_CODES = np.asarray([KIND_CODES[k] for k in kinds.OP_KINDS], dtype=np.int64)


def nearest(parent: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Row position of each row's nearest proper ancestor (through ``parent``) with ``wanted`` set; -1 if none."""
    up = parent.astype(np.int64, copy=True)
    pending = np.flatnonzero(up >= 0)
    pending = pending[~wanted[up[pending]]]
    while len(pending):
        up[pending] = parent[up[pending]]
        pending = pending[up[pending] >= 0]
        pending = pending[~wanted[up[pending]]]
    return up


def self_ns(dur_ns: np.ndarray, parent: np.ndarray, kind: np.ndarray) -> np.ndarray:
    """Self time of every row (never below 0 where children overlap their parent's end)."""
    in_tree = np.isin(kind, OP_TREE_CODES)
    tree_parent = nearest(parent, in_tree)
    out = dur_ns.astype(np.int64, copy=True)
    child = in_tree & (tree_parent >= 0)
    np.subtract.at(out, tree_parent[child], dur_ns[child])
    has_parent = parent >= 0
    plain = np.flatnonzero(has_parent)[~in_tree[parent[has_parent]]]  # children of rows outside the tree
    np.subtract.at(out, parent[plain], dur_ns[plain])
    return np.maximum(out, 0)


def op_of(parent: np.ndarray, kind: np.ndarray, launcher: np.ndarray) -> np.ndarray:
    """Each row's nearest enclosing framework op or annotation (Python frames skipped); device rows
    take the op of the runtime call that launched them. -1 where there is none."""
    found = nearest(parent, np.isin(kind, OP_CODES))
    launched = (found < 0) & (launcher >= 0)
    found[launched] = found[launcher[launched]]
    return np.where(found >= 0, found, NO_ID)

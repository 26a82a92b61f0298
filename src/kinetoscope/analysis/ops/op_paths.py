"""Where an op sits in the op tree: its path of ancestor op names, from the ``nn.Module:`` frame
around its outermost op down to itself (``nn.Module: Linear_0 / aten::linear / aten::addmm``).

Two runs' ops match by this path (nearest common ancestor), so an op keeps its counterpart when
sibling ops were inserted or removed elsewhere. Paths are built one tree level at a time over the
whole table (numpy, no Python per row); only the distinct paths become text.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables.column_arrays import codes
from kinetoscope.analysis.ops.attribution import nearest_module, op_parents

SEPARATOR = " / "


@dataclass(frozen=True)
class OpPaths:
    """Each row's path id (-1 for rows that are no op) and each path id's text and parent path."""

    path: np.ndarray
    text: list[str]
    parent_text: list[str]


def depths(up: np.ndarray) -> np.ndarray:
    """Number of ancestors of each row along ``up`` (-1: none), by pointer jumping level by level."""
    depth = np.zeros(len(up), dtype=np.int64)
    at = up.copy()
    while (at >= 0).any():
        live = at >= 0
        depth[live] += 1
        at[live] = up[at[live]]
    return depth


def op_paths(events: pa.Table, is_node: np.ndarray) -> OpPaths:
    """Paths of one rank's rows where ``is_node`` (the ops and annotations of the tree); a root op's
    path starts with the ``nn.Module:`` frame nearest to it, when the trace has module frames."""
    name_code, names = codes(events, "name")
    up = np.where(is_node, op_parents(events), -1)
    up = np.where(up >= 0, np.where(is_node[np.maximum(up, 0)], up, -1), -1)
    module = nearest_module(events, np.where(is_node & (up < 0), np.arange(len(up)), -1))
    root = np.where(module >= 0, name_code[np.maximum(module, 0)], -1)  # a module's name as the root's parent
    depth = depths(up)
    path = np.full(len(up), -1, dtype=np.int64)
    parents: list[np.ndarray] = []
    own: list[np.ndarray] = []
    count = 0
    for level in range(int(depth[is_node].max()) + 1 if is_node.any() else 0):
        rows = np.flatnonzero(is_node & (depth == level))
        parent = path[up[rows]] if level else -2 - root[rows]  # -2 - code: "module name" parents at the top
        pairs, inverse = np.unique(np.stack([parent, name_code[rows]]), axis=1, return_inverse=True)
        path[rows] = count + inverse.reshape(-1)
        parents.append(pairs[0])
        own.append(pairs[1])
        count += pairs.shape[1]
    return _texts(
        path, np.concatenate(parents or [np.zeros(0, np.int64)]), np.concatenate(own or [np.zeros(0, np.int64)]), names
    )


def _texts(path: np.ndarray, parent: np.ndarray, own: np.ndarray, names: list[str]) -> OpPaths:
    """Text of each path id, parents before children (ids are made level by level)."""
    text: list[str] = []
    parent_text: list[str] = []
    for up, name in zip(parent.tolist(), own.tolist(), strict=True):
        if up >= 0:
            head = text[up]
        elif up == -1:
            head = ""
        else:
            head = names[-2 - up]
        parent_text.append(head)
        text.append(f"{head}{SEPARATOR}{names[name]}" if head else names[name])
    return OpPaths(path, text, parent_text)

"""Ops compared by their place in the op tree: each op keyed by its parent path
(``analysis.ops.op_paths``), so an op keeps its counterpart when siblings were inserted or
removed elsewhere, and what matched nothing under each parent.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables.column_arrays import codes, ints
from kinetoscope.analysis._tables.masks import is_in
from kinetoscope.analysis._tables.rank_slices import per_rank
from kinetoscope.analysis._tables.selection import where
from kinetoscope.analysis.compare.aggregates import (
    GONE,
    MATCHED,
    NEW,
    REPLACED,
    Agg,
    Side,
    aggregate,
    by_impact,
    coded,
    figures,
    merge_all,
)
from kinetoscope.analysis.ops import attribution, host, op_paths
from kinetoscope.model import kinds


def counted_ops(events: pa.Table, side: Side, with_path: bool = False) -> Iterable[tuple[pa.Table, np.ndarray]]:
    """Per rank, the counted ops inside the side's steps and their self time; ``with_path`` adds
    each op's place: ``op_parent`` (its parent path in the op tree, ``analysis.op_paths``) and
    ``op_module`` (its nearest ``nn.Module:`` frame)."""
    host_rows = where(events, is_in(events, "layer", (kinds.FRAMEWORK, kinds.RUNTIME)))  # runtime calls decide folds
    for key, rank_events in per_rank(host_rows):
        if with_path and key not in side.placed:  # the op tree and the modules read the same places
            side.placed[key] = with_places(rank_events)
        placed = side.placed[key] if with_path else rank_events
        kept, self_ns = host.counted_ops(placed)
        inside = np.isin(ints(kept, "step"), side.step_numbers) if side.step_numbers else np.ones(kept.num_rows, bool)
        kept, self_ns = where(kept, inside), self_ns[inside]
        yield kept, self_ns


def with_places(events: pa.Table) -> pa.Table:
    """``events`` with ``op_parent`` and ``op_module`` as dictionary columns (no Python per row)."""
    found = op_paths.op_paths(events, is_in(events, "kind", kinds.OP_KINDS))
    parent = pa.DictionaryArray.from_arrays(
        pa.array(np.where(found.path >= 0, found.path, len(found.parent_text)), pa.int64()),
        pa.array([*found.parent_text, ""], pa.string()),
    )
    module = attribution.nearest_module(events, np.arange(events.num_rows))
    code, names = codes(events, "name")
    module_name = pa.DictionaryArray.from_arrays(
        pa.array(np.where(module >= 0, code[np.maximum(module, 0)], len(names)), pa.int64()),
        pa.array([*names, attribution.NO_MODULE], pa.string()),
    )
    return events.append_column("op_parent", parent).append_column("op_module", module_name)


PathKey = tuple[str, str]  # (parent path in the op tree, op name)


def op_path_aggregates(events: pa.Table, side: Side) -> dict[PathKey, Agg]:
    """Counted ops of every rank by their place in the op tree: (parent path, name)."""
    parts = []
    for kept, self_ns in counted_ops(events, side, with_path=True):
        columns = [coded(kept, "op_parent"), coded(kept, "name")]
        idx = side.step_index(ints(kept, "step"))
        parts.append(aggregate(columns, idx, ints(kept, "dur_ns"), self_ns, len(side.step_numbers)))
    return merge_all(parts)


def compare_op_tree(
    base: dict[PathKey, Agg], new: dict[PathKey, Agg], sides: tuple[Side, Side]
) -> list[dict[str, Any]]:
    """Ops matched by path in the op tree; under one parent path (not at the top), the ops gone and
    the ops new pair up, most self time first, as ``replaced`` (a fused op, a renamed one)."""
    rows = [_tree_row((k, k), MATCHED, base[k], new[k], sides) for k in base.keys() & new.keys()]
    gone = _by_parent({k: v for k, v in base.items() if k not in new})
    added = _by_parent({k: v for k, v in new.items() if k not in base})
    for parent in gone | added:
        olds, news = gone.get(parent, []), added.get(parent, [])
        pairs = min(len(olds), len(news)) if parent else 0
        for (bk, b), (nk, n) in zip(olds[:pairs], news[:pairs], strict=True):
            rows.append(_tree_row((bk, nk), REPLACED, b, n, sides))
        rows += [_tree_row((k, k), GONE, b, None, sides) for k, b in olds[pairs:]]
        rows += [_tree_row((k, k), NEW, None, n, sides) for k, n in news[pairs:]]
    return by_impact(rows)


def _by_parent(aggs: dict[PathKey, Agg]) -> dict[str, list[tuple[PathKey, Agg]]]:
    out: dict[str, list[tuple[PathKey, Agg]]] = {}
    for key, agg in sorted(aggs.items(), key=lambda kv: -kv[1].self_ns):
        out.setdefault(key[0], []).append((key, agg))
    return out


def _tree_row(
    keys: tuple[PathKey, PathKey], match: str, base: Agg | None, new: Agg | None, sides: tuple[Side, Side]
) -> dict[str, Any]:
    (parent, name), new_name = keys[0], keys[1][1]
    head = {"parent": parent, "name": name, "new_name": new_name, "match": match}
    return {**head, **figures(base, new, sides)}


def unmatched_in_tree(tree: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Places in the op tree with no counterpart (``parent / name``), most impact first."""

    def place(r: dict[str, Any]) -> str:
        return f"{r['parent']}{op_paths.SEPARATOR}{r['name']}" if r["parent"] else str(r["name"])

    return {
        "op_tree_gone": [place(r) for r in tree if r["match"] == GONE],
        "op_tree_new": [place(r) for r in tree if r["match"] == NEW],
    }

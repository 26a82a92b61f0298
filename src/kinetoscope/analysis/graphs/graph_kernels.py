"""Each piece of device work replayed from a CUDA/HIP graph, with the op that captured it.

``graph_match`` pairs a replayed row with a capture-time launch; here that launch is described
(its op's name, input shapes and the innermost Python frame at it), once per distinct launch, and
``replayed_work`` gives one row per replayed kernel, copy or set for the viewer and for scripts:
the summary's roll-ups (``cuda_graphs``) group the same columns.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables.column_arrays import ints
from kinetoscope.analysis._tables.id_lookup import id_positions
from kinetoscope.analysis._tables.rank_slices import Tables, per_rank
from kinetoscope.analysis.graphs import graph_capture, graph_match
from kinetoscope.analysis.ops.attribution import NO_OP


@dataclass(frozen=True)
class LaunchOps:
    """The op around each of some capture-time launches (arrays over the launches)."""

    op_at: np.ndarray  # position of the op (-1: none)
    op: np.ndarray  # its name (``NO_OP``: none)
    input_dims: np.ndarray  # "" where not recorded
    input_types: np.ndarray
    stack_id: np.ndarray  # innermost Python frame at the launch, else at its op (-1: none)


def launch_ops(events: pa.Table, launches: np.ndarray) -> LaunchOps:
    """The op, input shapes and Python frame of each capture-time launch (row positions)."""
    op_at = id_positions(events, ints(events, "op_id")[launches])
    shaped = graph_capture.op_shapes(events, np.maximum(op_at, 0))
    dims = np.where(op_at >= 0, _texts(shaped.column("input_dims")), "")
    types = np.where(op_at >= 0, _texts(shaped.column("input_types")), "")
    names = events.column("name").take(pa.array(np.maximum(op_at, 0))).cast(pa.string())
    op = np.where(op_at >= 0, np.asarray(names.to_numpy(zero_copy_only=False), dtype=object), NO_OP).astype(str)
    return LaunchOps(op_at, op, dims, types, _stacks(events, launches, op_at))


def _texts(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray([value or "" for value in column.to_pylist()], dtype=object).astype(str)


def _stacks(events: pa.Table, launch: np.ndarray, op_at: np.ndarray) -> np.ndarray:
    if "stack_id" not in events.column_names:
        return np.full(len(launch), -1, dtype=np.int64)
    stack = ints(events, "stack_id")
    own = stack[launch]
    found: np.ndarray = np.where((own < 0) & (op_at >= 0), stack[np.maximum(op_at, 0)], own)
    return found


def _rank_table(events: pa.Table) -> pa.Table:
    found = graph_match.match(events)
    ids = ints(events, "id")
    matched = found.capture_launch >= 0
    launches, of_launch = np.unique(found.capture_launch[matched], return_inverse=True)
    described = launch_ops(events, launches)
    at = np.full(len(found.work), -1, dtype=np.int64)
    at[matched] = of_launch.reshape(-1)

    op_ids = np.where(described.op_at >= 0, ids[np.maximum(described.op_at, 0)], -1)
    return pa.table(
        {
            "id": pa.array(ids[found.work], pa.int64()),  # in 64 bits where the events came in 32
            "graph_launch_id": pa.array(ids[found.replay], pa.int64()),
            "capture_launch_id": _spread(ids[launches], at, -1),
            "capture_op_id": _spread(op_ids, at, -1),
            "capture_op": _spread(described.op, at, ""),
            "input_dims": _spread(described.input_dims, at, ""),
            "input_types": _spread(described.input_types, at, ""),
            "stack_id": _spread(described.stack_id, at, -1),
            "matched_by": _labels(graph_match.METHODS, found.method),
            "reason": _labels(graph_match.REASONS, found.reason),
        }
    )


def _spread(values: np.ndarray, at: np.ndarray, missing: int | str) -> pa.Array:
    """``values[at]`` for each row, ``missing`` where ``at`` is -1: strings as a dictionary over the
    distinct launches' values (no string per row is built), numbers taken."""
    if isinstance(missing, str):
        return _labels(
            [*np.asarray(values, dtype=object).astype(str).tolist(), missing], np.where(at >= 0, at, len(values))
        )
    return pa.array(
        np.where(at >= 0, np.asarray(values, dtype=np.int64)[np.maximum(at, 0)] if len(values) else missing, missing)
    )


def _labels(values: Sequence[str], index: np.ndarray) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array(index, pa.int32()), pa.array(list(values), pa.string()))


def replayed_work(tables: Tables) -> pa.Table:
    """One row per piece of replayed device work (``id``, its ``graph_launch_id``) with the launch
    it was matched to at capture (``capture_launch_id``; -1: none), that launch's op
    (``capture_op_id``, ``capture_op``, ``input_dims``, ``input_types``), the innermost Python frame
    at it (``stack_id``), ``matched_by``, and ``reason`` where it was not matched."""
    parts = []
    for (run, rank), events in per_rank(tables["events"]):
        part = _rank_table(events)
        if part.num_rows:
            keys = {"run": pa.repeat(run, part.num_rows), "rank": pa.repeat(pa.scalar(rank, pa.int32()), part.num_rows)}
            parts.append(pa.table({**keys, **{name: part.column(name) for name in part.column_names}}))
    return pa.concat_tables(parts) if parts else pa.schema(_SCHEMA).empty_table()


_LABEL = pa.dictionary(pa.int32(), pa.string())
_SCHEMA = [
    ("run", pa.string()),
    ("rank", pa.int32()),
    ("id", pa.int64()),
    ("graph_launch_id", pa.int64()),
    ("capture_launch_id", pa.int64()),
    ("capture_op_id", pa.int64()),
    ("capture_op", _LABEL),
    ("input_dims", _LABEL),
    ("input_types", _LABEL),
    ("stack_id", pa.int64()),
    ("matched_by", _LABEL),
    ("reason", _LABEL),
]

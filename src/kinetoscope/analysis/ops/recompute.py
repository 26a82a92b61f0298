"""Activation recomputation: the forward ops ``torch.utils.checkpoint`` runs again in backward.

The autograd engine runs each backward node inside an ``autograd::engine::evaluate_function: X``
op, with grad mode off: the ops a backward formula calls record no ``Sequence number``. Checkpointing
recomputes its region's forward with grad mode on, inside the backward node that first needs a
saved activation (the non-reentrant form, ``use_reentrant=False``) or inside its own
``CheckpointFunctionBackward`` node (the reentrant form); those recomputed ops record a
``Sequence number``, as forward ops do. So a recomputed op is an op under a backward node, not the
node itself, that records a ``Sequence number``. A backward run with ``create_graph=True``
(double backward) records them too and reads as recomputation.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis._tables.column_arrays import ints
from kinetoscope.analysis._tables.masks import is_in, starts_with
from kinetoscope.analysis._tables.rank_slices import Tables, per_rank
from kinetoscope.analysis._tables.result_tables import rows
from kinetoscope.analysis._tables.selection import gathered
from kinetoscope.analysis.ops import attribution
from kinetoscope.analysis.settings.options import DEFAULT_TOP, TopOptions
from kinetoscope.model import kinds

BACKWARD_NODE = "autograd::engine::evaluate_function: "
SEQUENCE = '"Sequence number"'
ALL = "(all recomputation)"


def ancestor_marked(up: np.ndarray, marked: np.ndarray) -> np.ndarray:
    """Rows with a ``marked`` row among their enclosing ops (themselves not counted), by pointer
    jumping: after round k each row knows its 2**k nearest ancestors, so the rounds grow with the
    log of the nesting depth, not with the depth."""
    has_up = up >= 0
    found: np.ndarray = has_up & marked[np.maximum(up, 0)]
    jump = up.copy()
    while has_up.any():
        at = np.maximum(jump, 0)
        found = found | (has_up & found[at])
        jump = np.where(has_up, jump[at], -1)
        has_up = jump >= 0
    return found


def _with_sequence(events: pa.Table, candidates: np.ndarray) -> np.ndarray:
    """Which ``candidates`` rows record a ``Sequence number`` in their args."""
    found = np.zeros(events.num_rows, dtype=bool)
    at = np.flatnonzero(candidates)
    if not len(at) or "args" not in events.column_names:
        return found
    args = gathered(events.column("args"), at)  # a chunked column's take joins every chunk first
    if pa.types.is_dictionary(args.type):
        args = args.cast(pa.string())
    found[at] = np.asarray(pc.fill_null(pc.match_substring(args, SEQUENCE), False).to_numpy(zero_copy_only=False))
    return found


def recomputed(events: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """(the outermost recomputed op rows, the top-level backward node rows) of one rank, as masks."""
    up = attribution.op_up(events)
    node = starts_with(events, "name", BACKWARD_NODE)
    under = ancestor_marked(up, node)
    is_node = (up >= 0) & node[np.maximum(up, 0)]  # ``X`` inside ``evaluate_function: X``
    found = _with_sequence(events, is_in(events, "kind", (kinds.OP,)) & under & ~node & ~is_node)
    outermost = found & ~((up >= 0) & found[np.maximum(up, 0)])
    return outermost, node & ~under


def _rank_rows(events: pa.Table, top: int) -> list[dict[str, object]]:
    outer, backward = recomputed(events)
    if not backward.any():
        return []
    launched = attribution.launches(events)
    on_gpu = len(launched.work) > 0
    if on_gpu:
        time_ns = attribution.inclusive_time_ns(attribution.op_parents(events), launched.op, launched.dur_ns)
        whole = launched.busy_ns
    else:
        time_ns = ints(events, "dur_ns")
        up = attribution.op_up(events)
        top_ops = is_in(events, "kind", (kinds.OP,)) & ~starts_with(events, "name", attribution.STEP_PREFIX)
        whole = int(time_ns[top_ops & ~ancestor_marked(up, top_ops)].sum())
    backward_ns = int(time_ns[backward].sum())
    cpu_ns = ints(events, "dur_ns")
    at = np.flatnonzero(outer)
    found = [(ALL, at)]
    if len(at):
        names = events.column("name").take(pa.array(at)).cast(pa.string()).to_numpy(zero_copy_only=False)
        unique, inverse = np.unique(np.asarray(names, dtype=str), return_inverse=True)
        by_name = [(str(unique[i]), at[inverse == i]) for i in range(len(unique))]
        found += sorted(by_name, key=lambda kv: (-int(time_ns[kv[1]].sum()), kv[0]))[:top]
    source = "gpu" if on_gpu else "cpu"
    return [
        {
            "op": name,
            "calls": len(mine),
            "cpu_ns": int(cpu_ns[mine].sum()),
            "time_ns": int(time_ns[mine].sum()),
            "time_source": source,
            "pct": round(100 * int(time_ns[mine].sum()) / whole, 2) if whole > 0 else None,
            "pct_of_backward": round(100 * int(time_ns[mine].sum()) / backward_ns, 2) if backward_ns > 0 else None,
        }
        for name, mine in found
    ]


def activation_recomputation(tables: Tables, options: TopOptions = DEFAULT_TOP) -> pa.Table:
    """Per rank with a backward pass: the forward ops recomputed in backward (``torch.utils.checkpoint``),
    in all on the first line, then by op name (the outermost recomputed op of each region): calls,
    CPU time, their time (device time launched under them, or CPU time on a CPU-only rank), its share
    of device busy time (of top-level op time on a CPU-only rank) and of the backward pass."""
    records = []
    for (run, rank), events in per_rank(tables["events"]):
        records += [{"run": run, "rank": rank, **row} for row in _rank_rows(events, options.top)]
    return rows(_SCHEMA, records)


_SCHEMA = [
    ("run", pa.string()),
    ("rank", pa.int32()),
    ("op", pa.string()),
    ("calls", pa.int64()),
    ("cpu_ns", pa.int64()),
    ("time_ns", pa.int64()),
    ("time_source", pa.string()),
    ("pct", pa.float64()),
    ("pct_of_backward", pa.float64()),
]

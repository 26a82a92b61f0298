"""CUDA and HIP graph replays: device work launched by ``cudaGraphLaunch`` / ``hipGraphLaunch``.

A replayed graph's kernels correlate with the graph launch call, not with the ops that queued them
when the graph was captured, so the roll-ups give all their time to the op around the launch (a
``CompiledFunction`` under ``torch.compile(mode="reduce-overhead")``, a ``CUDAGraph.replay``).
``cuda_graph_replays`` says how much device time that is, under which op, and how much of it was
matched to the launches recorded while the graph was captured (``graph_match``);
``cuda_graph_capture_ops`` rolls the matched work up to the capturing op, its input shapes and its
Python frame; ``cuda_graph_unmatched`` lists the replays that could not be matched, and why.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables import reuse
from kinetoscope.analysis._tables.column_arrays import codes, ints
from kinetoscope.analysis._tables.id_lookup import id_positions
from kinetoscope.analysis._tables.rank_slices import Tables, per_rank
from kinetoscope.analysis._tables.result_tables import frame_labels, pct, rows
from kinetoscope.analysis.graphs import graph_kernels, graph_match
from kinetoscope.analysis.ops import attribution
from kinetoscope.analysis.settings.options import DEFAULT_TOP, TopOptions

UNKNOWN_FRAME = "(no Python frame)"


def _busy_ns(events: pa.Table) -> int:
    """The rank's device busy time (the union of its device work), found once inside ``reuse.reusing()``."""
    return reuse.cached(events, "busy_ns", lambda: attribution.launches(events).busy_ns)


def _op_codes(events: pa.Table, at: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """(a code per row of its op's name, the names the codes index; ``NO_OP`` for no op), integers
    to group by rather than strings."""
    name_codes, values = codes(events, "name")
    found: np.ndarray = np.where(at >= 0, name_codes[np.maximum(at, 0)], len(values))
    return found, [*values, attribution.NO_OP]


def _replay_rows(events: pa.Table) -> list[dict[str, object]]:
    found = graph_match.match(events)
    if not len(found.work):
        return []
    busy_ns = _busy_ns(events)
    captured = bool(found.captures)
    op_code, labels = _op_codes(events, id_positions(events, ints(events, "op_id")[found.work]))
    unique, inverse = np.unique(op_code, return_inverse=True)
    dur = ints(events, "dur_ns")[found.work]
    gpu_ns = np.bincount(inverse, weights=dur, minlength=len(unique)).astype(np.int64)
    kernels = np.bincount(inverse, minlength=len(unique))
    matched = np.bincount(inverse, weights=found.capture_launch >= 0, minlength=len(unique)).astype(np.int64)
    return [
        {
            "op": labels[int(unique[i])],
            "graph_launches": len(np.unique(found.replay[inverse == i])),
            "kernels": int(kernels[i]),
            "kernels_matched": int(matched[i]),
            "gpu_ns": int(gpu_ns[i]),
            "pct_of_busy": pct(int(gpu_ns[i]), busy_ns) if busy_ns > 0 else None,
            "capture_in_trace": captured,
        }
        for i in np.argsort(-gpu_ns, kind="stable").tolist()
    ]


def cuda_graph_replays(tables: Tables) -> pa.Table:
    """Per rank that replays CUDA/HIP graphs, per op around the graph launch call: graph launches,
    the device work they replayed, how much of it was matched to the launches recorded when its
    graph was captured (``cuda_graph_capture_ops``), its time and share of device busy time, and
    whether the trace holds a graph capture."""
    records = []
    for (run, rank), events in per_rank(tables["events"]):
        records += [{"run": run, "rank": rank, **row} for row in _replay_rows(events)]
    return rows(_REPLAY_SCHEMA, records)


def _frame_labels(tables: Tables) -> Mapping[int, str]:
    frames = tables.get("frames")
    if frames is None or frames.num_rows == 0:
        return {}
    return frame_labels(frames)


def _capture_op_rows(events: pa.Table, labels: Mapping[int, str], top: int) -> list[dict[str, object]]:
    found = graph_match.match(events)
    matched = found.capture_launch >= 0
    if not matched.any():
        return []
    launches, of_launch = np.unique(found.capture_launch[matched], return_inverse=True)
    described = graph_kernels.launch_ops(events, launches)
    op, dims, types, stack = described.op, described.input_dims, described.input_types, described.stack_id
    # one group per (op, shapes, frame) of the capture-time launch
    _, of_key = np.unique(_joined(op, dims, types, stack.astype(str)), return_inverse=True)
    group = of_key.reshape(-1)[of_launch.reshape(-1)]
    unique, first, inverse = np.unique(group, return_index=True, return_inverse=True)
    methods = np.unique(inverse.reshape(-1) * len(graph_match.METHODS) + found.method[matched])
    dur = ints(events, "dur_ns")[found.work[matched]]
    gpu_ns = np.bincount(inverse, weights=dur, minlength=len(unique)).astype(np.int64)
    kernels = np.bincount(inverse, minlength=len(unique))
    replays, busy_ns = found.replay[matched], _busy_ns(events)
    out = []
    for i in np.argsort(-gpu_ns, kind="stable")[:top].tolist():
        at = int(of_launch.reshape(-1)[first[i]])
        out.append(
            {
                "op": str(op[at]),
                "input_dims": str(dims[at]),
                "input_types": str(types[at]),
                "stack_id": int(stack[at]),
                "frame": labels.get(int(stack[at]), UNKNOWN_FRAME),
                "matched_by": ", ".join(
                    graph_match.METHODS[int(m) % len(graph_match.METHODS)]
                    for m in methods[methods // len(graph_match.METHODS) == i].tolist()
                ),
                "graph_launches": len(np.unique(replays[inverse == i])),
                "kernels": int(kernels[i]),
                "gpu_ns": int(gpu_ns[i]),
                "pct_of_busy": pct(int(gpu_ns[i]), busy_ns) if busy_ns > 0 else None,
            }
        )
    return out


def _joined(*parts: np.ndarray) -> np.ndarray:
    """Each row's parts as one string, split by a character no name or shape holds."""
    joined = parts[0]
    for part in parts[1:]:
        joined = np.char.add(np.char.add(joined, "\x1f"), part)
    return joined


def cuda_graph_capture_ops(tables: Tables, options: TopOptions = DEFAULT_TOP) -> pa.Table:
    """Per rank, device work replayed from CUDA/HIP graphs by the op that launched it while the
    graph was captured: that op, its input shapes, the innermost Python frame at the launch, how
    the replayed work was matched to it (``order``, ``order within kernel name``, or both), the graph
    launches and replayed work matched to it, its time and share of device busy time. Only
    the replays matched to a capture in the trace count (``cuda_graph_unmatched`` lists the rest)."""
    labels = _frame_labels(tables)
    records = []
    for (run, rank), events in per_rank(tables["events"]):
        records += [{"run": run, "rank": rank, **row} for row in _capture_op_rows(events, labels, options.top)]
    return rows(_CAPTURE_OP_SCHEMA, records)


def _unmatched_rows(events: pa.Table) -> list[dict[str, object]]:
    found = graph_match.match(events)
    unmatched = found.capture_launch < 0
    if not unmatched.any():
        return []
    op_code, labels = _op_codes(events, id_positions(events, ints(events, "op_id")[found.work[unmatched]]))
    reasons = found.reason[unmatched]
    unique, inverse = np.unique(op_code * len(graph_match.REASONS) + reasons, return_inverse=True)
    replays, dur = found.replay[unmatched], ints(events, "dur_ns")[found.work[unmatched]]
    gpu_ns = np.bincount(inverse, weights=dur, minlength=len(unique)).astype(np.int64)
    sizes = ", ".join(str(len(c.launches)) for c in found.captures)
    out = []
    for i in np.argsort(-gpu_ns, kind="stable").tolist():
        calls, per_call = np.unique(replays[inverse == i], return_counts=True)
        out.append(
            {
                "op": labels[int(unique[i]) // len(graph_match.REASONS)],
                "reason": graph_match.REASONS[int(unique[i]) % len(graph_match.REASONS)],
                "graph_launches": len(calls),
                "kernels": int(per_call.sum()),
                "gpu_ns": int(gpu_ns[i]),
                "work_per_replay": ", ".join(str(n) for n in np.unique(per_call).tolist()),
                "launches_per_capture": sizes,
            }
        )
    return out


def cuda_graph_unmatched(tables: Tables) -> pa.Table:
    """Per rank, the CUDA/HIP graph replays whose device work could not be matched to a capture in
    the trace, per op around the graph launch and reason: no capture in the trace, no capture with
    as many launches as the replay has pieces of work, kernels that differ, a replay on several
    streams that order alone would match, or several captures that fit; with the replays' sizes
    and the captures' launch counts."""
    records = []
    for (run, rank), events in per_rank(tables["events"]):
        records += [{"run": run, "rank": rank, **row} for row in _unmatched_rows(events)]
    return rows(_UNMATCHED_SCHEMA, records)


_REPLAY_SCHEMA = [
    ("run", pa.string()),
    ("rank", pa.int32()),
    ("op", pa.string()),
    ("graph_launches", pa.int64()),
    ("kernels", pa.int64()),
    ("kernels_matched", pa.int64()),
    ("gpu_ns", pa.int64()),
    ("pct_of_busy", pa.float64()),
    ("capture_in_trace", pa.bool_()),
]
_CAPTURE_OP_SCHEMA = [
    ("run", pa.string()),
    ("rank", pa.int32()),
    ("op", pa.string()),
    ("input_dims", pa.string()),
    ("input_types", pa.string()),
    ("stack_id", pa.int64()),
    ("frame", pa.string()),
    ("matched_by", pa.string()),
    ("graph_launches", pa.int64()),
    ("kernels", pa.int64()),
    ("gpu_ns", pa.int64()),
    ("pct_of_busy", pa.float64()),
]
_UNMATCHED_SCHEMA = [
    ("run", pa.string()),
    ("rank", pa.int32()),
    ("op", pa.string()),
    ("reason", pa.string()),
    ("graph_launches", pa.int64()),
    ("kernels", pa.int64()),
    ("gpu_ns", pa.int64()),
    ("work_per_replay", pa.string()),
    ("launches_per_capture", pa.string()),
]

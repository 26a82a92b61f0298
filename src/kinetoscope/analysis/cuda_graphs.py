"""CUDA and HIP graph replays: device work launched by ``cudaGraphLaunch`` / ``hipGraphLaunch``.

A replayed graph's kernels correlate with the graph launch call, not with the ops that queued them
when the graph was captured, so the roll-ups give all their time to the op around the launch (a
``CompiledFunction`` under ``torch.compile(mode="reduce-overhead")``, a ``CUDAGraph.replay``).
This analysis says how much device time that is, under which op, and whether the trace holds a
capture at all (``cudaStreamBeginCapture`` ... ``cudaStreamEndCapture``, ``cudaGraphInstantiate``).
The capturing ops are not matched to the replayed kernels: no trace at hand holds a capture in its
window (torch.compile and ``torch.cuda.graphs`` capture during warm-up), so every replayed kernel
is counted under its launch's op only.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis import attribution
from kinetoscope.analysis.frames import DEVICE_WORK, Tables, ints, is_in, per_rank, positions, rows, string_mask

GRAPH_LAUNCH = r"^(cuda|hip)GraphLaunch"
CAPTURE = r"^(cuda|hip)(StreamBeginCapture|StreamEndCapture|GraphInstantiate)"


def _matches(events: pa.Table, pattern: str) -> np.ndarray:
    return string_mask(events, "name", lambda names: pc.match_substring_regex(names, pattern))


def _rank_rows(events: pa.Table) -> list[dict[str, object]]:
    launch_call = _matches(events, GRAPH_LAUNCH)
    if not launch_call.any():
        return []
    work = np.flatnonzero(is_in(events, "kind", DEVICE_WORK))
    call = positions(ints(events, "id"), ints(events, "launch_id")[work])
    replayed = work[(call >= 0) & launch_call[np.maximum(call, 0)]]
    replay_calls = call[(call >= 0) & launch_call[np.maximum(call, 0)]]
    busy_ns = attribution.launches(events).busy_ns
    captured = bool(_matches(events, CAPTURE).any())
    op_at = positions(ints(events, "id"), ints(events, "op_id")[replayed])
    op_names = events.column("name").take(pa.array(np.maximum(op_at, 0))).cast(pa.string())
    labels = np.where(op_at >= 0, np.asarray(op_names.to_numpy(zero_copy_only=False), dtype=object), attribution.NO_OP)
    unique, inverse = np.unique(labels.astype(str), return_inverse=True)
    dur = ints(events, "dur_ns")[replayed]
    gpu_ns = np.bincount(inverse, weights=dur, minlength=len(unique)).astype(np.int64)
    kernels = np.bincount(inverse, minlength=len(unique))
    found = []
    for i in np.argsort(-gpu_ns, kind="stable").tolist():
        found.append(
            {
                "op": str(unique[i]),
                "graph_launches": len(np.unique(replay_calls[inverse == i])),
                "kernels": int(kernels[i]),
                "gpu_ns": int(gpu_ns[i]),
                "pct_of_busy": round(100 * int(gpu_ns[i]) / busy_ns, 2) if busy_ns > 0 else None,
                "capture_in_trace": captured,
            }
        )
    return found


def cuda_graph_replays(tables: Tables) -> pa.Table:
    """Per rank that replays CUDA/HIP graphs, per op around the graph launch call: graph launches,
    the device work they replayed (its capturing ops are not in these figures), its time and share
    of device busy time, and whether the trace holds a graph capture."""
    records = []
    for (run, rank), events in per_rank(tables["events"]):
        records += [{"run": run, "rank": rank, **row} for row in _rank_rows(events)]
    return rows(_SCHEMA, records)


_SCHEMA = [
    ("run", pa.string()),
    ("rank", pa.int32()),
    ("op", pa.string()),
    ("graph_launches", pa.int64()),
    ("kernels", pa.int64()),
    ("gpu_ns", pa.int64()),
    ("pct_of_busy", pa.float64()),
    ("capture_in_trace", pa.bool_()),
]

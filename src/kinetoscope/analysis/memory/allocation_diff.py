"""Two runs' memory snapshots compared: the peak of live allocated bytes on each side, and the
Python stacks whose live bytes at that peak grew (or shrank) the most.

A stack is named by its innermost frames (``name (file:line)``, innermost first, up to
``FRAMES_SHOWN``), so stacks of two runs match by where they allocated, not by their ids. Bytes
at peak are those of the blocks live at the moment the side's live total was highest
(``allocation_peaks``): allocated at or before it (or before recording began) and not freed by it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables.column_arrays import ints, strings
from kinetoscope.analysis._tables.rank_slices import Tables, per_rank
from kinetoscope.analysis.memory.memory_peaks import allocation_peaks

FRAMES_SHOWN = 3
UNKNOWN = "(unknown stack)"


def live_at(allocs: pa.Table, ts_ns: int) -> np.ndarray:
    """Which blocks are live at ``ts_ns`` (``-1``: the peak lies before any recorded event)."""
    alloc_ts, free_ts = ints(allocs, "alloc_ts_ns"), ints(allocs, "free_ts_ns")
    born = (alloc_ts < 0) | ((alloc_ts <= ts_ns) & (ts_ns >= 0))
    alive: np.ndarray = born & ((free_ts < 0) | (free_ts > ts_ns))
    return alive


def stack_labels(frames: pa.Table, wanted: list[int]) -> dict[int, str]:
    """``stack_id`` -> its innermost frames as text, walking ``parent_id`` (only the stacks wanted)."""
    ids = ints(frames, "stack_id").tolist()
    parents = dict(zip(ids, ints(frames, "parent_id").tolist(), strict=True))
    text = {
        sid: f"{name} ({file}:{line})"
        for sid, name, file, line in zip(
            ids, strings(frames, "name"), strings(frames, "file"), ints(frames, "line").tolist(), strict=True
        )
    }
    out = {}
    for sid in wanted:
        shown: list[str] = []
        at = sid
        while at in text and len(shown) < FRAMES_SHOWN:
            shown.append(text[at])
            at = parents.get(at, -1)
        out[sid] = " < ".join(shown) if shown else UNKNOWN
    return out


def bytes_at_peak(tables: Tables) -> tuple[dict[str, Any], dict[str, int]]:
    """(the peak: bytes, blocks, ranks; bytes live at it per stack label), summed over the ranks given."""
    by_stack: dict[str, int] = {}
    peak = {"peak_bytes": 0, "allocations": int(tables["allocations"].num_rows), "ranks": 0}
    for _, allocs in per_rank(tables["allocations"]):
        row = allocation_peaks({"allocations": allocs}).to_pylist()[0]
        peak["peak_bytes"] += row["peak_bytes"]
        peak["ranks"] += 1
        alive = live_at(allocs, row["peak_ts_ns"])
        stacks, sizes = ints(allocs, "stack_id")[alive], ints(allocs, "size_bytes")[alive]
        present, inverse = np.unique(stacks, return_inverse=True)
        totals = np.bincount(inverse.reshape(-1), weights=sizes, minlength=len(present)).astype(np.int64)
        labels = stack_labels(tables["frames"], present.tolist())
        for sid, total in zip(present.tolist(), totals.tolist(), strict=True):
            label = labels[sid]
            by_stack[label] = by_stack.get(label, 0) + int(total)
    return peak, by_stack


def compare_allocations(base: Tables, new: Tables, top: int) -> dict[str, Any] | None:
    """The peaks of both sides and the stacks by change of bytes at peak, most first; None unless
    both sides have allocations (memory snapshots)."""
    if not base["allocations"].num_rows or not new["allocations"].num_rows:
        return None
    (base_peak, base_stacks), (new_peak, new_stacks) = bytes_at_peak(base), bytes_at_peak(new)
    rows: list[dict[str, Any]] = []
    for label in base_stacks.keys() | new_stacks.keys():
        b, n = base_stacks.get(label, 0), new_stacks.get(label, 0)
        rows.append({"stack": label, "base_bytes_at_peak": b, "new_bytes_at_peak": n, "delta_bytes": n - b})
    rows.sort(key=lambda r: (-r["delta_bytes"], r["stack"]))
    grew = [r for r in rows if r["delta_bytes"] > 0]
    shrank = sorted((r for r in rows if r["delta_bytes"] < 0), key=lambda r: (r["delta_bytes"], r["stack"]))
    return {
        "base": base_peak,
        "new": new_peak,
        "delta_peak_bytes": new_peak["peak_bytes"] - base_peak["peak_bytes"],
        "stacks_grew": grew[:top] if top > 0 else grew,
        "stacks_shrank": shrank[:top] if top > 0 else shrank,
        "stacks_total": len(rows),
    }

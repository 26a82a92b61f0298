"""Memory analyses: device memory peaks (allocator totals over time) and, from memory
snapshots, the peak of live allocations and the Python stacks that allocated the most."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis._tables import reuse
from kinetoscope.analysis._tables.column_arrays import ints, string_mask
from kinetoscope.analysis._tables.examples import EXAMPLE_FIELD, example_ids
from kinetoscope.analysis._tables.group_sums import group_sums, most_first
from kinetoscope.analysis._tables.rank_slices import Tables, per_rank
from kinetoscope.analysis._tables.result_tables import frame_labels, rows
from kinetoscope.analysis._tables.selection import where
from kinetoscope.analysis.settings.options import DEFAULT_TOP, TopOptions


def device_memory(tables: Tables) -> pa.Table:
    """Per rank and memory counter (``device N memory allocated``, ``host allocator reserved``, ...): peak."""
    counters = tables["counters"]
    return reuse.cached(counters, "device_memory", lambda: _device_memory(counters))


def _device_memory(counters: pa.Table) -> pa.Table:
    """One grouping over the memory counters of every rank (counter names sorted within a rank)."""
    counters = where(counters, string_mask(counters, "name", _is_memory_counter))
    memory = pa.table(
        {
            "run": counters.column("run").cast(pa.string()),
            "rank": counters.column("rank").cast(pa.int32()),
            "counter": counters.column("name").cast(pa.string()),
            "value": counters.column("value").cast(pa.float64()),
        }
    )
    peaks = memory.group_by(["run", "rank", "counter"], use_threads=False).aggregate([("value", "max")])
    peaks = pa.table(
        {name: peaks.column(name) for name in ("run", "rank", "counter")} | {"peak_bytes": peaks.column("value_max")}
    )
    return peaks.sort_by([("run", "ascending"), ("rank", "ascending"), ("counter", "ascending")])


def _is_memory_counter(names: pa.Array) -> pa.Array:
    """Whether each counter name is a memory counter (``... memory allocated``, ``... memory
    reserved``, ``... allocator ...``); tested on the names' dictionary, once per distinct name."""
    found = pc.or_(pc.match_substring(names, "memory allocated"), pc.match_substring(names, "memory reserved"))
    return pc.or_(found, pc.match_substring(names, "allocator"))


def _peak(allocs: pa.Table) -> tuple[int, int]:
    """(peak live bytes, its time) from allocation and free times (-1: before / after the window)."""
    size = ints(allocs, "size_bytes")
    alloc_ts, free_ts = ints(allocs, "alloc_ts_ns"), ints(allocs, "free_ts_ns")
    base = int(size[alloc_ts < 0].sum())
    times = np.concatenate([alloc_ts[alloc_ts >= 0], free_ts[free_ts >= 0]])
    deltas = np.concatenate([size[alloc_ts >= 0], -size[free_ts >= 0]])
    if not len(times):
        return base, -1
    order = np.lexsort((deltas, times))  # frees before allocations at the same time
    live = base + np.cumsum(deltas[order])
    at = int(np.argmax(live))
    return int(max(live[at], base)), int(times[order][at])


def allocation_peaks(tables: Tables) -> pa.Table:
    """Per rank, the peak of live allocated bytes (from memory snapshots) and when it happened."""
    records = []
    for (run, rank), allocs in per_rank(tables["allocations"]):
        peak, at = _peak(allocs)
        records.append({"run": run, "rank": rank, "allocations": allocs.num_rows, "peak_bytes": peak, "peak_ts_ns": at})
    schema = [
        ("run", pa.string()),
        ("rank", pa.int32()),
        ("allocations", pa.int64()),
        ("peak_bytes", pa.int64()),
        ("peak_ts_ns", pa.int64()),
    ]
    return rows(schema, records)


def top_allocation_stacks(tables: Tables, options: TopOptions = DEFAULT_TOP) -> pa.Table:
    """Per rank, the Python stacks that allocated the most bytes, named by their innermost frame;
    ``example_id`` is the allocator event of its largest allocation joined to one (-1: none joined)."""
    frames = tables["frames"]
    label = frame_labels(frames)
    records = []
    for (run, rank), allocs in per_rank(tables["allocations"]):
        stacks, sizes, events = ints(allocs, "stack_id"), ints(allocs, "size_bytes"), ints(allocs, "event_id")
        groups = group_sums(stacks, [sizes])
        present, slot = np.unique(stacks, return_inverse=True)
        example = example_ids(slot.reshape(-1), np.where(events >= 0, sizes, -1), events, len(present))
        for at in most_first(groups.sums[0])[: options.top].tolist():
            stack, size, count = int(groups.code[at]), int(groups.sums[0][at]), int(groups.rows[at])
            records.append(
                {
                    "run": run,
                    "rank": rank,
                    "stack_id": stack,
                    "frame": label.get(stack, "(unknown)"),
                    "size_bytes": size,
                    "allocations": count,
                    "example_id": int(example[np.searchsorted(present, stack)]),
                }
            )
    schema = [
        ("run", pa.string()),
        ("rank", pa.int32()),
        ("stack_id", pa.int64()),
        ("frame", pa.string()),
        ("size_bytes", pa.int64()),
        ("allocations", pa.int64()),
        EXAMPLE_FIELD,
    ]
    return rows(schema, records)

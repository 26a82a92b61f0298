"""Where the device's idle time goes: per stream and per device, the gaps between device work
split into host wait (data loading included), launch latency, synchronisation and other
(``analysis/device/gaps.py``), and the gaps by size (micro and macro idle)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables.rank_slices import RankKey, Tables, per_rank
from kinetoscope.analysis._tables.result_tables import pct, rows
from kinetoscope.analysis.device import gaps
from kinetoscope.analysis.settings.options import DEFAULT_IDLE, IdleOptions

# Gap sizes (ns): upper bounds of the buckets of ``idle_gaps``, the last one open.
GAP_BUCKETS: tuple[tuple[str, int], ...] = (
    ("<10us", 10_000),
    ("10-100us", 100_000),
    ("100us-1ms", 1_000_000),
    (">=1ms", 1 << 62),
)


def rank_timelines(tables: Tables, options: IdleOptions) -> Iterator[tuple[RankKey, gaps.Work, gaps.Timeline]]:
    """Every timeline of every rank with device work: each stream's, then its device's (stream -1),
    found one at a time as asked. Not kept for the other analysis that asks (idle_time and
    idle_gaps): the timelines of a rank's work take about 64 bytes a gap each, 158 MB held to the
    summary's end for 1 M kernels, against 0.15 s to find them again."""
    yield from _rank_timelines(tables["events"], options.launch_latency_max_ns)


def _rank_timelines(table: pa.Table, latency_max_ns: int) -> Iterator[tuple[RankKey, gaps.Work, gaps.Timeline]]:
    for key, events in per_rank(table):
        work = gaps.rank_work(events)
        if not len(work.ids):
            continue
        block = gaps.blocked(events)
        for timeline in gaps.timelines(work, block, latency_max_ns, gaps.loading(events)):
            yield key, work, timeline


def _example(work: gaps.Work, timeline: gaps.Timeline, chosen: np.ndarray) -> int:
    """The id of the op that ends the longest of the ``chosen`` gaps (-1: none)."""
    if not chosen.any():
        return -1
    longest = int(np.flatnonzero(chosen)[np.argmax(timeline.gap_ns[chosen])])
    return int(work.ids[timeline.next_row[longest]])


def idle_time(tables: Tables, options: IdleOptions = DEFAULT_IDLE) -> pa.Table:
    """Per rank, device and stream (stream -1: the device's streams merged), the idle time between
    device work and why: host wait (the next op was not launched yet), launch latency (queued, not
    started), sync (the host waited for the device) and other; ``example_id`` ends the longest gap."""
    records = []
    for (run, rank), work, timeline in rank_timelines(tables, options):
        idle = int(timeline.gap_ns.sum())
        record = {
            "run": run,
            "rank": rank,
            "device": timeline.device,
            "stream": timeline.stream,
            "ops": len(timeline.rows),
            "span_ns": timeline.span_ns,
            "busy_ns": timeline.busy_ns,
            "idle_ns": idle,
            "idle_pct": pct(idle, timeline.span_ns),
            "gaps": len(timeline.gap_ns),
        }
        for name in gaps.CATEGORIES:
            part = int(timeline.split_ns[name].sum())
            record[f"{name}_ns"], record[f"{name}_pct"] = part, pct(part, idle)
        record["example_id"] = _example(work, timeline, np.ones(len(timeline.gap_ns), bool))
        records.append(record)
    schema = [
        ("run", pa.string()),
        ("rank", pa.int32()),
        ("device", pa.int32()),
        ("stream", pa.int64()),
        ("ops", pa.int64()),
        ("span_ns", pa.int64()),
        ("busy_ns", pa.int64()),
        ("idle_ns", pa.int64()),
        ("idle_pct", pa.float64()),
        ("gaps", pa.int64()),
        *[
            (f"{name}_{unit}", pa.int64() if unit == "ns" else pa.float64())
            for name in gaps.CATEGORIES
            for unit in ("ns", "pct")
        ],
        ("example_id", pa.int64()),
    ]
    return rows(schema, records)


def idle_gaps(tables: Tables, options: IdleOptions = DEFAULT_IDLE) -> pa.Table:
    """Per rank and device (its streams merged), the gaps between device work by size: micro gaps
    (under 10 µs, launch overhead) to macro gaps (1 ms and more, the host or a wait); count, total
    time and share of the idle time, and each size's main cause."""
    records = []
    for (run, rank), work, timeline in rank_timelines(tables, options):
        if timeline.stream != -1:
            continue
        sizes, idle = timeline.gap_ns, int(timeline.gap_ns.sum())
        low = 0
        for label, high in GAP_BUCKETS:
            chosen = (sizes >= low) & (sizes < high)
            low = high
            total = int(sizes[chosen].sum())
            parts = {name: int(timeline.split_ns[name][chosen].sum()) for name in gaps.CATEGORIES}
            records.append(
                {
                    "run": run,
                    "rank": rank,
                    "device": timeline.device,
                    "size": label,
                    "gaps": int(chosen.sum()),
                    "total_ns": total,
                    "pct_of_idle": pct(total, idle),
                    "main_cause": max(parts, key=lambda name: parts[name]) if total else "",
                    "example_id": _example(work, timeline, chosen),
                }
            )
    schema = [
        ("run", pa.string()),
        ("rank", pa.int32()),
        ("device", pa.int32()),
        ("size", pa.string()),
        ("gaps", pa.int64()),
        ("total_ns", pa.int64()),
        ("pct_of_idle", pa.float64()),
        ("main_cause", pa.string()),
        ("example_id", pa.int64()),
    ]
    return rows(schema, records)

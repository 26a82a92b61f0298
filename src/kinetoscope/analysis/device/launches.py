"""How device work is launched: the delay from each launch call to its op's start, how many ops
each stream holds queued, and how much of the device time goes to short kernels.

An op's launch call is ``events.launch_id`` (the runtime call with its correlation id); ops
launched before the trace began, or with no correlation id, have none and are left out of the
delays and queues. A CUDA/HIP graph replay is one launch: the delay from its graph launch call
to its first node counts, its other nodes are not launches (``model.graphs``) and are left out
of the delays (they stay in the queues: the replay queued them).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables.rank_slices import Tables, per_rank
from kinetoscope.analysis._tables.result_tables import pct, rows
from kinetoscope.analysis.device import gaps
from kinetoscope.analysis.settings.options import DEFAULT_IDLE, IdleOptions

PERCENTILES = (50, 90, 99)


def kernel_launches(tables: Tables, options: IdleOptions = DEFAULT_IDLE) -> pa.Table:
    """Per rank: device ops, how many have their launch call in the trace, the delay from the call's
    start to the op's start (p50, p90, p99, max; ``example_id`` waited longest), and the ops shorter
    than ``short_kernel_ns``: how many, and their share of the device time."""
    records = []
    for (run, rank), events in per_rank(tables["events"]):
        work = gaps.rank_work(events)
        if not len(work.ids):
            continue
        known = (work.launch_ts_ns >= 0) & ~work.replay_node
        delay = (work.start_ns - work.launch_ts_ns)[known]
        durations = work.end_ns - work.start_ns
        short = durations < options.short_kernel_ns
        record = {"run": run, "rank": rank, "ops": len(work.ids), "launched": int(known.sum())}
        for q in PERCENTILES:
            record[f"delay_p{q}_ns"] = int(np.percentile(delay, q, method="inverted_cdf")) if len(delay) else None
        record["delay_max_ns"] = int(delay.max()) if len(delay) else None
        short_ns = int(durations[short].sum())
        record["short_ops"], record["short_ns"] = int(short.sum()), short_ns
        record["short_pct_of_device_time"] = pct(short_ns, int(durations.sum()))
        record["example_id"] = int(work.ids[known][np.argmax(delay)]) if len(delay) else -1
        records.append(record)
    schema = [
        ("run", pa.string()),
        ("rank", pa.int32()),
        ("ops", pa.int64()),
        ("launched", pa.int64()),
        *[(f"delay_p{q}_ns", pa.int64()) for q in PERCENTILES],
        ("delay_max_ns", pa.int64()),
        ("short_ops", pa.int64()),
        ("short_ns", pa.int64()),
        ("short_pct_of_device_time", pa.float64()),
        ("example_id", pa.int64()),
    ]
    return rows(schema, records)


def queue_levels(up_ns: np.ndarray, down_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The number of items between ``up`` and ``down`` over time: (times, level from each time to
    the next, which up raised it there, -1 for a down); at equal times downs count first."""
    times = np.concatenate([down_ns, up_ns])  # downs first: a stable sort puts them first at equal times
    delta = np.concatenate([-np.ones(len(down_ns), np.int64), np.ones(len(up_ns), np.int64)])
    source = np.concatenate([np.full(len(down_ns), -1), np.arange(len(up_ns))])
    order = np.argsort(times, kind="stable")
    return times[order], np.cumsum(delta[order]), source[order]


def _summary(up_ns: np.ndarray, down_ns: np.ndarray) -> tuple[int, float, int]:
    """(max level, time-weighted mean level from the first up to the last down, the up reaching the max)."""
    times, level, source = queue_levels(up_ns, down_ns)
    span = int(times[-1] - times[0])
    mean = float((level[:-1] * np.diff(times)).sum()) / span if span > 0 else float(level.max())
    peak = int(np.argmax(level))
    return int(level[peak]), round(mean, 2), int(source[peak])


def _launched_per_stream(work: gaps.Work) -> list[tuple[int, int, np.ndarray]]:
    """(device, stream, rows of ``work`` with a launch call there, in row order), by device then stream."""
    known = np.flatnonzero(work.launch_ts_ns >= 0)
    if not len(known):
        return []
    device, stream = work.device[known], work.stream[known]
    order = np.lexsort((stream, device))  # stable: each place's rows together, in row order
    device, stream, known = device[order], stream[order], known[order]
    starts = np.flatnonzero(np.r_[True, (device[1:] != device[:-1]) | (stream[1:] != stream[:-1])])
    groups = np.split(known, starts[1:])
    return [(d, s, rows) for d, s, rows in zip(device[starts].tolist(), stream[starts].tolist(), groups, strict=True)]


def queue_lengths(tables: Tables) -> pa.Table:
    """Per rank, device and stream: ops launched, and how many were queued at once, launched and not
    finished (``max_queued``, time-weighted ``mean_queued``) and launched and not started
    (``max_waiting``, ``mean_waiting``: HTA's queue length); ``example_id`` is the op whose launch
    brought the stream to ``max_queued``."""
    records = []
    for (run, rank), events in per_rank(tables["events"]):
        work = gaps.rank_work(events)
        for device, stream, chosen in _launched_per_stream(work):
            launch = work.launch_ts_ns[chosen]
            max_queued, mean_queued, at = _summary(launch, work.end_ns[chosen])
            max_waiting, mean_waiting, _ = _summary(launch, work.start_ns[chosen])
            records.append(
                {
                    "run": run,
                    "rank": rank,
                    "device": device,
                    "stream": stream,
                    "ops": len(chosen),
                    "max_queued": max_queued,
                    "mean_queued": mean_queued,
                    "max_waiting": max_waiting,
                    "mean_waiting": mean_waiting,
                    "example_id": int(work.ids[chosen[at]]),
                }
            )
    schema = [
        ("run", pa.string()),
        ("rank", pa.int32()),
        ("device", pa.int32()),
        ("stream", pa.int64()),
        ("ops", pa.int64()),
        ("max_queued", pa.int64()),
        ("mean_queued", pa.float64()),
        ("max_waiting", pa.int64()),
        ("mean_waiting", pa.float64()),
        ("example_id", pa.int64()),
    ]
    return rows(schema, records)

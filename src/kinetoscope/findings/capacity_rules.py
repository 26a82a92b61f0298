"""Memory near its capacity: a device's allocator peak against the device's total memory, and on
the host the memory in use against the host's total.

Device capacity comes from the trace's ``deviceProperties`` (``sessions.device_memory``), the
device's use from the allocator counters of ``profile_memory=True`` (``device N memory reserved``,
else ``allocated``). Host figures come from the ``HOST_MEMORY`` capture mode's samples
(``host memory used`` and ``host memory total``, ``process resident memory``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from kinetoscope.analysis.tables import ints, is_in
from kinetoscope.findings.engine import Observation, rule
from kinetoscope.findings.ranks import RankData
from kinetoscope.model import kinds

GIB = 1 << 30
HOST_USED, HOST_TOTAL, PROCESS_RSS = "host memory used", "host memory total", "process resident memory"
NO_GAIN = "none: this costs no time until an allocation fails (or the host swaps); it is the headroom left"


def _series(data: RankData, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times, values, devices) of one counter of the rank."""
    counters = data.counters
    if counters is None or not counters.num_rows:
        empty = np.zeros(0, np.int64)
        return empty, empty.astype(np.float64), empty
    mask = is_in(counters, "name", (name,))  # over the names' dictionary, not a string per row
    values = np.asarray(counters.column("value").to_numpy(zero_copy_only=False), np.float64)
    return ints(counters, "ts_ns")[mask], values[mask], ints(counters, "device")[mask]


def _capacities(data: RankData) -> dict[int, int]:
    """Device index -> total bytes, from the rank's sessions (the smallest where sessions differ)."""
    if data.sessions is None or "device_memory" not in data.sessions.column_names:
        return {}
    found: dict[int, int] = {}
    for text in data.sessions.column("device_memory").to_pylist():
        for device, size in json.loads(text or "{}").items():
            found[int(device)] = min(int(size), found.get(int(device), int(size)))
    return found


def _running_at(data: RankData, ts_ns: int) -> np.ndarray:
    """Top-level ops running at ``ts_ns`` (what the rank was doing at the peak)."""
    at = data.top_level_ops & (data.ints("ts_ns") <= ts_ns) & (data.ends() >= ts_ns)
    return np.flatnonzero(at)


def _device_findings(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    found = []
    for device, capacity in sorted(_capacities(data).items()):
        for counter in (f"device {device} memory reserved", f"device {device} memory allocated"):
            ts, values, _ = _series(data, counter)
            if len(values):
                break
        if not len(values) or values.max() < limits["min_used_pct"] / 100 * capacity:
            continue
        peak_at = int(np.argmax(values))
        peak_ts = int(ts[peak_at])
        allocs = data.kind(kinds.ALLOCATION) & (data.ints("ts_ns") == peak_ts)
        rows = np.flatnonzero(allocs)
        rows = rows if len(rows) else _running_at(data, peak_ts)
        seen: dict[str, Any] = {
            "device": device,
            "counter": counter,
            "peak_bytes": int(values[peak_at]),
            "capacity_bytes": capacity,
            "used_pct": round(100 * float(values[peak_at]) / capacity, 2),
            "free_at_peak_bytes": int(capacity - values[peak_at]),
            "peak_ts_ns": peak_ts,
        }
        summary = (
            f"device {device}: {counter.rsplit(' ', 1)[-1]} peaks at {values[peak_at] / GIB:.2f} GiB of "
            f"{capacity / GIB:.2f} GiB ({seen['used_pct']}%)"
        )
        found.append(Observation(summary, seen, rows, 0, NO_GAIN, "high" if seen["used_pct"] >= 98 else None))
    return found


def _host_findings(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    ts, used, _ = _series(data, HOST_USED)
    _, total, _ = _series(data, HOST_TOTAL)
    if not len(used) or not len(total) or total.max() <= 0:
        return []
    share = used / total.max()
    peak_at = int(np.argmax(share))
    if share[peak_at] < limits["min_used_pct"] / 100:
        return []
    _, rss, _ = _series(data, PROCESS_RSS)
    seen: dict[str, Any] = {
        "device": "host",
        "peak_bytes": int(used[peak_at]),
        "capacity_bytes": int(total.max()),
        "used_pct": round(100 * float(share[peak_at]), 2),
        "free_at_peak_bytes": int(total.max() - used[peak_at]),
        "peak_ts_ns": int(ts[peak_at]),
        "process_peak_bytes": int(rss.max()) if len(rss) else -1,
    }
    mine = f"; this process peaks at {rss.max() / GIB:.2f} GiB" if len(rss) else ""
    summary = (
        f"host memory in use peaks at {used[peak_at] / GIB:.2f} GiB of {total.max() / GIB:.2f} GiB "
        f"({seen['used_pct']}%){mine}"
    )
    rows = _running_at(data, int(ts[peak_at]))
    return [Observation(summary, seen, rows, 0, NO_GAIN, "high" if seen["used_pct"] >= 98 else None)]


@rule(
    "memory_near_capacity",
    "Memory near its capacity",
    "medium",
    "Make headroom before an out-of-memory error: activation checkpointing (`torch.utils.checkpoint`), a "
    "smaller micro-batch with gradient accumulation, mixed precision, sharding parameters and optimizer state "
    "(FSDP, ZeRO), and `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` against fragmentation; on the host, "
    "fewer or lighter DataLoader workers and memory-mapped datasets.",
    min_used_pct=90,
)
def memory_near_capacity(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """Per device, the allocator's peak against the device's total memory; on the host, the memory in
    use against the host's total."""
    return _device_findings(data, limits) + _host_findings(data, limits)

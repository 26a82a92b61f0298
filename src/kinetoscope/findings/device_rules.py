"""Rules on the device: idle gaps, launch-bound steps, copies, communication, memory; and lost data."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa

from kinetoscope.analysis.device import gaps
from kinetoscope.analysis.device.device_time import communication_overlap
from kinetoscope.analysis.memory.memory_peaks import device_memory
from kinetoscope.analysis.tables import launched_outside, not_empty, sweep
from kinetoscope.findings.engine import Observation, rule, severity_by_share
from kinetoscope.findings.ranks import RankData
from kinetoscope.model import kinds, launch_calls

NS_PER_US = 1_000
NS_PER_MS = 1_000_000
HOST_ACTIVITY = (kinds.OP, kinds.RUNTIME_CALL, kinds.SYNC, kinds.ALLOCATION, kinds.COLLECTIVE)
LOSS_WARNINGS = ("dropped_events", "truncated", "corrupt")


def _gaps(data: RankData, min_gap_ns: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(gap starts, gap ends, row of the work that ends each gap) between the rank's device work."""
    work = data.device_rows
    starts, ends = data.device_busy
    gap_start, gap_end = ends[:-1], starts[1:]
    keep = (gap_end - gap_start) >= min_gap_ns
    gap_start, gap_end = gap_start[keep], gap_end[keep]
    by_start = work[np.argsort(data.ints("ts_ns")[work], kind="stable")]
    at = np.searchsorted(data.ints("ts_ns")[by_start], gap_end)
    return gap_start, gap_end, by_start[np.minimum(at, len(by_start) - 1)] if len(by_start) else at


def _overlap_ns(gap_start: np.ndarray, gap_end: np.ndarray, start: np.ndarray, end: np.ndarray) -> np.ndarray:
    """Time each interval [start, end) spends inside the disjoint, sorted gaps."""
    lengths = gap_end - gap_start
    before = np.concatenate([[0], np.cumsum(lengths)])

    def covered(t: np.ndarray) -> np.ndarray:
        i = np.searchsorted(gap_start, t, side="right") - 1
        inside = np.clip(t - gap_start[np.maximum(i, 0)], 0, lengths[np.maximum(i, 0)])
        return np.where(i >= 0, before[np.maximum(i, 0)] + inside, 0)

    return np.asarray(covered(end) - covered(start))


def _distinct_rows(rows: np.ndarray, count: int) -> np.ndarray:
    """The distinct rows of ``rows`` (-1: none), ascending, of a table of ``count`` rows: marked, not sorted."""
    marked = np.zeros(count, dtype=bool)
    marked[rows[rows >= 0]] = True
    return np.flatnonzero(marked)


def _host_rows(data: RankData) -> np.ndarray:
    """Host rows counted once: top-level ops, and runtime calls, syncs and allocator events."""
    return np.flatnonzero(data.top_level_ops | data.kind(*HOST_ACTIVITY[1:]))


@rule(
    "gpu_idle_host_bound",
    "Device idle while the host prepares the next work",
    "medium",
    "Take the host work named here off the critical path: load data in DataLoader workers "
    "(`num_workers>0`, `pin_memory=True`), move Python bookkeeping and synchronisations out of the step, "
    "and let the host run ahead of the device.",
    min_gap_us=50,
    min_idle_pct=5,
    needs=("device", "complete"),
)
def gpu_idle_host_bound(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """Gaps between device work where the next work was launched only after the device ran dry."""
    if not data.device_work.any():
        return []
    gap_start, gap_end, next_row = _gaps(data, limits["min_gap_us"] * NS_PER_US)
    launch = data.positions(data.ints("launch_id")[next_row]) if len(next_row) else next_row
    host_bound = (launch >= 0) & (data.ints("ts_ns")[np.maximum(launch, 0)] >= gap_start)
    gap_start, gap_end, next_row = gap_start[host_bound], gap_end[host_bound], next_row[host_bound]
    idle_ns = int((gap_end - gap_start).sum())
    span_ns = data.device_span_ns
    if idle_ns < limits["min_idle_pct"] / 100 * span_ns or not len(gap_start):
        return []
    host = _host_rows(data)
    overlap = _overlap_ns(gap_start, gap_end, data.ints("ts_ns")[host], data.ends(host))
    busy = overlap > 0
    seen: dict[str, Any] = {
        "gaps": len(gap_start),
        "idle_ns": idle_ns,
        "device_span_ns": span_ns,
        "idle_pct_of_span": round(100 * idle_ns / max(span_ns, 1), 2),
        "longest_gap_ns": int((gap_end - gap_start).max()),
    }
    doing = data.top_names_at(host[busy], overlap[busy])
    seen["host_during_gaps"] = doing
    summary = (
        f"{len(gap_start)} gap(s) of at least {limits['min_gap_us']:g} µs with no work queued: "
        f"{idle_ns / NS_PER_MS:.2f} ms idle ({seen['idle_pct_of_span']}% of the device span)"
        + (f"; the host was mostly in {doing[0]['name']}" if doing else "")
    )
    basis = "the idle time of the gaps (an upper bound: the host work in them has to go somewhere)"
    ranges = np.stack([gap_start, gap_end], axis=1)
    return [Observation(summary, seen, next_row, idle_ns, basis, severity_by_share(idle_ns, span_ns), ranges)]


@rule(
    "launch_bound",
    "Launch-bound: many short kernels and an idle device",
    "medium",
    'Launch fewer kernels: capture the step in a CUDA graph (`torch.compile(mode="reduce-overhead")` or '
    "`torch.cuda.graphs`), or fuse the small ops with `torch.compile`; larger batches also amortise launches.",
    min_kernels=100,
    short_kernel_us=10,
    min_short_pct=50,
    min_idle_pct=20,
    max_gap_us=50,
    needs=("device",),
)
def launch_bound(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """Most kernels shorter than the launch cost, and the device idle for much of their span in gaps
    too short to be anything but launch latency (longer gaps are ``gpu_idle_host_bound``'s)."""
    kernels = np.flatnonzero(data.kind(kinds.KERNEL) & data.in_steps())
    if len(kernels) < limits["min_kernels"]:
        return []
    durations = data.ints("dur_ns")[kernels]
    short = durations < limits["short_kernel_us"] * NS_PER_US
    short_pct = 100 * float(short.mean())
    if short_pct < limits["min_short_pct"]:  # most kernels long: not launch-bound, whatever the gaps
        return []
    span_ns = int(data.ends(kernels).max() - data.ints("ts_ns")[kernels].min())
    starts, ends = data.device_busy
    gaps = starts[1:] - ends[:-1]
    idle_ns = int(gaps[gaps < limits["max_gap_us"] * NS_PER_US].sum())
    if idle_ns < limits["min_idle_pct"] / 100 * span_ns:
        return []
    launches = _distinct_rows(data.positions(data.ints("launch_id")[kernels]), data.events.num_rows)
    launch_ns = int(data.ints("dur_ns")[launches].sum())
    seen = {
        "kernels": len(kernels),
        "kernels_per_step": round(len(kernels) / max(data.step_count, 1), 1),
        "short_kernel_pct": round(short_pct, 2),
        "mean_kernel_ns": round(float(durations.mean()), 1),
        "launch_call_ns": launch_ns,
        "launch_overhead_pct_of_span": round(100 * launch_ns / max(span_ns, 1), 2),
        "short_gap_idle_ns": idle_ns,
        "device_idle_pct_of_span": round(100 * idle_ns / max(span_ns, 1), 2),
    }
    gain_ns = min(idle_ns, launch_ns)
    summary = (
        f"{seen['kernels_per_step']} kernels per step, {seen['short_kernel_pct']}% under "
        f"{limits['short_kernel_us']:g} µs; launch calls take {seen['launch_overhead_pct_of_span']}% of the span "
        f"and the device is idle {seen['device_idle_pct_of_span']}% of it in gaps under {limits['max_gap_us']:g} µs"
    )
    basis = "the device's idle time in short gaps, at most the host's time in launch calls (a graph replays them)"
    return [Observation(summary, seen, kernels[short], gain_ns, basis, severity_by_share(gain_ns, span_ns))]


@rule(
    "pageable_copy",
    "Copies between pageable host memory and the device",
    "low",
    "Pin the host buffers (`pin_memory=True` in the DataLoader, or `tensor.pin_memory()`) and copy with "
    "`non_blocking=True`: pinned copies run at full bandwidth and do not block the host.",
    min_copies=1,
    pinned_speedup=2,
)
def pageable_copy(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """Memcpy rows whose name says a side was pageable host memory."""
    rows = np.flatnonzero(data.kind(kinds.MEMCPY) & data.name_matches("Pageable"))
    if len(rows) < limits["min_copies"]:
        return []
    copy_ns = int(data.ints("dur_ns")[rows].sum())
    args = data.events.column("args").take(rows).to_pylist()
    copied = sum(int(json.loads(text or "{}").get("bytes", 0) or 0) for text in args)
    seen = {
        "copies": len(rows),
        "copy_ns": copy_ns,
        "bytes": copied,
        "by_direction": data.top_names_at(rows, data.ints("dur_ns")[rows]),
    }
    gain_ns = int(copy_ns * (1 - 1 / max(limits["pinned_speedup"], 1)))
    summary = f"{len(rows)} pageable copies, {copied} bytes in {copy_ns / NS_PER_US:.1f} µs of device time"
    basis = f"the copies' time if pinned memory made them {limits['pinned_speedup']:g}× faster (a typical PCIe figure)"
    return [Observation(summary, seen, rows, gain_ns, basis)]


@rule(
    "lost_data",
    "The profiler lost data",
    "info",
    "Profile a window that starts after warm-up, raise Kineto's buffer limits if events were dropped, and "
    "re-capture a file that was cut short; until then, read the figures as lower bounds.",
    min_events=1,
)
def lost_data(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """Device work launched before the window, events Kineto dropped, truncated or corrupt files."""
    before = launched_outside(data.events)
    dropped = sum(int(v or 0) for v in _column(data.sessions, "dropped_events"))
    kinds_seen, counts = _column(data.warnings, "kind"), _column(data.warnings, "count")
    lost = {k: sum(int(c or 1) for w, c in zip(kinds_seen, counts, strict=True) if w == k) for k in LOSS_WARNINGS}
    dropped = max(dropped, lost.pop("dropped_events"))
    total = int(before.sum()) + dropped + sum(lost.values())
    if total < limits["min_events"]:
        return []
    seen = {
        "launched_before_window": int(before.sum()),
        "launched_before_window_ns": int(data.ints("dur_ns")[before].sum()),
        "dropped_events": dropped,
        "truncated_files": lost["truncated"],
        "corrupt_files": lost["corrupt"],
    }
    parts = [f"{v} {k.replace('_', ' ')}" for k, v in seen.items() if v and not k.endswith("_ns")]
    severity = "medium" if dropped or lost["truncated"] or lost["corrupt"] else "info"
    basis = "none: lost data costs no time, it makes the other figures lower bounds"
    return [Observation("; ".join(parts), seen, np.flatnonzero(before), 0, basis, severity)]


def _column(table: pa.Table | None, column: str) -> list[Any]:
    if table is None or column not in table.column_names:
        return []
    return list(table.column(column).to_pylist())


@rule(
    "copy_not_overlapped",
    "Memory copies not overlapped with computation",
    "low",
    "Prefetch: issue the next batch's copies early on a side stream (`torch.cuda.Stream`, pinned memory, "
    "`non_blocking=True`) so they run under the current step's kernels.",
    min_exposed_us=100,
    min_exposed_pct=1,
    needs=("device",),
)
def copy_not_overlapped(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """Time copies run while no kernel does (kernels and copies merged over streams first)."""
    inside = data.in_steps()
    kernels, copies = data.kind(kinds.KERNEL) & inside, data.kind(kinds.MEMCPY) & inside
    if not copies.any():
        return []
    starts = data.ints("ts_ns")
    combos = sweep([(starts[kernels], data.ends(kernels)), (starts[copies], data.ends(copies))])
    exposed_ns, hidden_ns = combos.get(2, 0), combos.get(3, 0)
    span_ns = data.device_span_ns
    if exposed_ns < limits["min_exposed_us"] * NS_PER_US or exposed_ns < limits["min_exposed_pct"] / 100 * span_ns:
        return []
    rows = np.flatnonzero(copies)
    seen = {
        "copies": len(rows),
        "exposed_ns": exposed_ns,
        "overlapped_ns": hidden_ns,
        "exposed_pct_of_span": round(100 * exposed_ns / max(span_ns, 1), 2),
        "by_direction": data.top_names_at(rows, data.ints("dur_ns")[rows]),
    }
    summary = (
        f"{len(rows)} copies run {exposed_ns / NS_PER_US:.1f} µs with no kernel beside them "
        f"({seen['exposed_pct_of_span']}% of the device span); {hidden_ns / NS_PER_US:.1f} µs overlapped"
    )
    basis = "the copies' time with no kernel running: on a side stream, ahead of need, it would hide under compute"
    return [Observation(summary, seen, rows, exposed_ns, basis, severity_by_share(exposed_ns, span_ns, "low"))]


@rule(
    "comm_not_overlapped",
    "Communication not overlapped with computation",
    "medium",
    "Overlap collectives with compute (DDP's gradient buckets, FSDP prefetch, async collectives waited on late); "
    "time inside a collective also counts waiting for the slowest rank, so check the `stragglers` analysis first.",
    min_exposed_pct=5,
    max_overlap_pct=50,
    needs=("device",),
)
def comm_not_overlapped(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """Collective time with no computation beside it, as the ``communication_overlap`` analysis measures it."""
    measured = communication_overlap({"events": data.events}).to_pylist()
    if not measured:
        return []
    comm_ns, overlap_ns = int(measured[0]["communication_ns"]), int(measured[0]["overlap_ns"])
    exposed_ns = comm_ns - overlap_ns
    overlap_pct = float(measured[0]["overlap_pct"])
    if exposed_ns < limits["min_exposed_pct"] / 100 * data.wall_ns or overlap_pct > limits["max_overlap_pct"]:
        return []
    carriers = (kinds.KERNEL,) if data.device_work.any() else (kinds.COLLECTIVE,)
    collective = data.kind(*carriers) & not_empty(data.events, "collective")
    rows = np.flatnonzero(collective & data.in_steps())
    seen = {
        "communication_ns": comm_ns,
        "overlapped_ns": overlap_ns,
        "overlap_pct": overlap_pct,
        "exposed_pct_of_wall": round(100 * exposed_ns / max(data.wall_ns, 1), 2),
        "collectives": data.top_names_at(rows, data.ints("dur_ns")[rows]),
    }
    summary = (
        f"{comm_ns / NS_PER_MS:.2f} ms of communication, {overlap_pct}% overlapped by computation: "
        f"{exposed_ns / NS_PER_MS:.2f} ms exposed ({seen['exposed_pct_of_wall']}% of the window)"
    )
    basis = "the communication time with no computation beside it (an upper bound: overlap needs independent work)"
    return [Observation(summary, seen, rows, exposed_ns, basis, severity_by_share(exposed_ns, data.wall_ns))]


GIB = 1 << 30


@rule(
    "memory_fragmentation",
    "Allocator reserves much more than it allocates",
    "low",
    "Set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` so the caching allocator grows segments instead of "
    "keeping many part-used ones; keep tensor shapes stable across steps.",
    min_reserved_gib=1,
    min_ratio=1.5,
)
def memory_fragmentation(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """Per device, the peak of the allocator's reserved bytes against the peak of its allocated bytes
    (``device N memory reserved/allocated`` counters, from ``profile_memory=True``)."""
    if data.counters is None or not data.counters.num_rows:
        return []
    peaks = {(r["device"], r["counter"].rsplit(" ", 1)[-1]): r["peak_bytes"] for r in _device_peaks(data)}
    found = []
    for device in sorted({d for d, _ in peaks}):
        reserved, allocated = peaks.get((device, "reserved"), 0.0), peaks.get((device, "allocated"), 0.0)
        if reserved < limits["min_reserved_gib"] * GIB or reserved < limits["min_ratio"] * max(allocated, 1.0):
            continue
        seen = {"device": device, "reserved_peak_bytes": int(reserved), "allocated_peak_bytes": int(allocated)}
        seen["ratio"] = round(reserved / max(allocated, 1.0), 2)
        summary = (
            f"device {device}: {reserved / GIB:.2f} GiB reserved at peak for {allocated / GIB:.2f} GiB allocated "
            f"({seen['ratio']}×)"
        )
        basis = "none: this costs memory, not time (the difference is what other work could use)"
        found.append(Observation(summary, seen, np.zeros(0, np.int64), 0, basis))
    return found


def _device_peaks(data: RankData) -> list[dict[str, Any]]:
    """The rank's rows of ``device_memory`` over every rank's counters: found once (the overview's
    own table inside ``reuse.reusing()``), not again on each rank's rows."""
    every = device_memory({"counters": data.all_counters}).to_pylist()
    peaks = [row for row in every if row["run"] == data.run and row["rank"] == data.rank]
    for row in peaks:
        row["device"] = int(row["counter"].split()[1]) if row["counter"].startswith("device ") else -1
    return [r for r in peaks if r["device"] >= 0 and r["counter"].endswith(("allocated", "reserved"))]


@rule(
    "device_starts_late",
    "Device work starts long after its launch",
    "medium",
    "Check the host and device clocks first (a constant offset shifts every launch delay and every gap by "
    "cause); otherwise the host runs far ahead of the device: read its numbers as queueing, and look at the "
    "device's own time (busy, kernels) rather than at host-device delays.",
    min_delay_ms=launch_calls.LATE_START_NS / NS_PER_MS,
    min_window_pct=100 * launch_calls.LATE_START_WINDOW_SHARE,
    needs=("device",),
)
def device_starts_late(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """The median delay from a launch call to its work's start (a graph replay counted once, by its
    first node) over ``min_delay_ms`` and ``min_window_pct`` of the rank's window."""
    work = gaps.rank_work(data.events)
    known = (work.launch_ts_ns >= 0) & ~work.replay_node
    if not known.any():
        return []
    delay = (work.start_ns - work.launch_ts_ns)[known]
    median_ns = int(np.percentile(delay, 50, method="inverted_cdf"))
    window_ns = data.wall_ns
    if median_ns < limits["min_delay_ms"] * NS_PER_MS or median_ns < window_ns * limits["min_window_pct"] / 100:
        return []
    least_ns = int(delay.min())
    seen = {
        "launches": int(known.sum()),
        "delay_p50_ns": median_ns,
        "delay_min_ns": least_ns,
        "delay_max_ns": int(delay.max()),
        "window_ns": window_ns,
        "delay_p50_pct_of_window": round(100 * median_ns / max(window_ns, 1), 2),
    }
    cause = (
        "every launch waits at least that long: a clock offset between host and device, or a backlog"
        if least_ns >= median_ns // 2
        else "the host runs far ahead of the device: queueing"
    )
    summary = (
        f"device work starts a median {median_ns / NS_PER_MS:.1f} ms after its launch "
        f"({seen['delay_p50_pct_of_window']}% of the window; least {least_ns / NS_PER_MS:.1f} ms over "
        f"{seen['launches']} launches): {cause}"
    )
    latest = np.argsort(-delay, kind="stable")[:5]
    rows = data.positions(work.ids[known][latest])
    basis = "none: a diagnosis (queueing or a clock offset) that makes host-device delays unreliable, not time saved"
    return [Observation(summary, seen, rows[rows >= 0], 0, basis)]

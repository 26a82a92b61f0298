"""One row per rank: the figures a reader checks first."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from kinetoscope.analysis._tables.column_arrays import ints
from kinetoscope.analysis._tables.masks import is_in
from kinetoscope.analysis._tables.rank_slices import RankKey, Tables, per_rank
from kinetoscope.analysis._tables.result_tables import pct, rows
from kinetoscope.analysis._tables.selection import launched_outside
from kinetoscope.analysis.device import device_time
from kinetoscope.analysis.memory import memory_peaks
from kinetoscope.analysis.ops import host
from kinetoscope.analysis.time import steps
from kinetoscope.model import kinds

_SCHEMA = [
    ("run", pa.string()),
    ("rank", pa.int32()),
    ("wall_ns", pa.int64()),
    ("steps", pa.int32()),
    ("step_mean_ns", pa.int64()),
    ("cpu_busy_pct", pa.float64()),
    ("device_busy_pct", pa.float64()),
    ("device_idle_pct", pa.float64()),
    ("memcpy_ns", pa.int64()),
    ("memset_ns", pa.int64()),
    ("launched_before_events", pa.int64()),
    ("launched_before_ns", pa.int64()),
    ("collective_ns", pa.int64()),
    ("collective_overlap_pct", pa.float64()),
    ("host_cpu_mean_pct", pa.float64()),
    ("host_cpu_peak_pct", pa.float64()),
    ("host_memory_mean_bytes", pa.float64()),
    ("host_memory_peak_bytes", pa.float64()),
    ("device_memory_peak_bytes", pa.float64()),
    ("allocation_peak_bytes", pa.int64()),
    ("dropped_events", pa.int64()),
    ("warnings", pa.int64()),
]


def _wall(events: pa.Table, sessions: dict[RankKey, tuple[int, int]], key: RankKey) -> int:
    start, stop = sessions.get(key, (-1, -1))
    if start > 0 and stop > start:
        return stop - start
    ts = ints(events, "ts_ns")
    return int((ts + ints(events, "dur_ns")).max() - ts.min()) if len(ts) else 0


def _by_key(table: pa.Table, *fields: str) -> dict[RankKey, dict[str, Any]]:
    return {(r["run"], r["rank"]): {f: r[f] for f in fields} for r in table.to_pylist()}


def _session_windows(sessions: pa.Table) -> dict[RankKey, tuple[int, int]]:
    windows: dict[RankKey, tuple[int, int]] = {}
    for r in sessions.to_pylist():
        key = (r["run"], r["rank"])
        start, stop = windows.get(key, (r["start_ns"], r["stop_ns"]))
        windows[key] = (min(start, r["start_ns"]), max(stop, r["stop_ns"]))
    return windows


def _sums(table: pa.Table, column: str) -> dict[RankKey, int]:
    out: dict[RankKey, int] = {}
    for r in table.to_pylist():
        if r.get("severity", "warning") == "note":
            continue
        key = (r["run"], r["rank"])
        out[key] = out.get(key, 0) + int(r[column] or 0)  # null: not recorded
    return out


def _device_row(events: pa.Table, wall: int) -> dict[str, Any]:
    work = device_time.device_work(events)
    if not work.num_rows:
        return {
            "device_busy_pct": None,
            "device_idle_pct": None,
            "memcpy_ns": 0,
            "memset_ns": 0,
            "launched_before_events": 0,
            "launched_before_ns": 0,
        }
    busy = pct(device_time.busy_ns(work), wall)
    copies = is_in(work, "kind", (kinds.MEMCPY,))
    sets = is_in(work, "kind", (kinds.MEMSET,))
    before = launched_outside(work)
    return {
        "device_busy_pct": busy,
        "device_idle_pct": round(100.0 - busy, 2),
        "memcpy_ns": int(ints(work, "dur_ns")[copies].sum()),
        "memset_ns": int(ints(work, "dur_ns")[sets].sum()),
        "launched_before_events": int(before.sum()),
        "launched_before_ns": int(ints(work, "dur_ns")[before].sum()),
    }


def rank_overview(tables: Tables) -> pa.Table:
    """Per rank: wall time, steps, host and device busy time, memory operations, collectives and
    their overlap with computation, host samples, memory peaks, and what was lost.
    ``launched_before_*``: device work the trace holds whose launch came before the window opened
    (counted in the other figures unless the summary runs with ``--window-launched-only``)."""
    windows = _session_windows(tables["sessions"])
    comm = _by_key(device_time.communication_overlap(tables), "communication_ns", "overlap_pct")
    samples = _by_key(
        host.host_samples(tables), "cpu_mean_pct", "cpu_peak_pct", "host_memory_mean_bytes", "host_memory_peak_bytes"
    )
    step_info = {key: {"steps": n, "mean_step_ns": mean} for key, (n, mean) in steps.step_counts(tables).items()}
    dev_mem = _device_memory_peaks(memory_peaks.device_memory(tables))
    allocs = _by_key(memory_peaks.allocation_peaks(tables), "peak_bytes")
    dropped, warned = _sums(tables["sessions"], "dropped_events"), _sums(tables["warnings"], "count")
    records = []
    for key, events in per_rank(tables["events"]):
        wall = _wall(events, windows, key)
        c, s, st = comm.get(key, {}), samples.get(key, {}), step_info.get(key, {})
        records.append(
            {
                "run": key[0],
                "rank": key[1],
                "wall_ns": wall,
                "steps": st.get("steps", 0),
                "step_mean_ns": st.get("mean_step_ns"),
                "cpu_busy_pct": pct(host.host_busy_ns(events), wall),
                **_device_row(events, wall),
                "collective_ns": c.get("communication_ns", 0),
                "collective_overlap_pct": c.get("overlap_pct"),
                "host_cpu_mean_pct": s.get("cpu_mean_pct"),
                "host_cpu_peak_pct": s.get("cpu_peak_pct"),
                "host_memory_mean_bytes": s.get("host_memory_mean_bytes"),
                "host_memory_peak_bytes": s.get("host_memory_peak_bytes"),
                "device_memory_peak_bytes": dev_mem.get(key),
                "allocation_peak_bytes": allocs.get(key, {}).get("peak_bytes"),
                "dropped_events": dropped.get(key, 0),
                "warnings": warned.get(key, 0),
            }
        )
    return rows(_SCHEMA, records)


def _device_memory_peaks(table: pa.Table) -> dict[RankKey, float]:
    out: dict[RankKey, float] = {}
    for r in table.to_pylist():
        if r["counter"].startswith("device ") and r["counter"].endswith("allocated"):
            key = (r["run"], r["rank"])
            out[key] = max(out.get(key, 0.0), r["peak_bytes"])
    return out

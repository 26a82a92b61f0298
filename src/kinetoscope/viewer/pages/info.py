"""The Info page: what the dataset knows of how it was made. Per session its versions, capture
config, clocks and files; and everything lost (dropped events, damaged or missing files,
warnings and notes).

Only the dataset's own tables are read (``sessions``, ``files``, ``warnings``); a column an older
dataset lacks is listed under ``missing`` instead of failing the page.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import duckdb

from kinetoscope._version import __version__
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying.queries import js_safe

SESSION_COLUMNS = (
    "run", "rank", "session", "path", "instance", "host", "pid", "local_rank", "world_size", "backend",
    "state", "start_ns", "stop_ns", "modes", "torch_version", "kinetoscope_version", "device_name",
    "device_memory", "event_count", "dropped_events",
)
FILE_COLUMNS = ("run", "rank", "session", "name", "size_bytes", "sha256", "status")
WARNING_COLUMNS = ("run", "rank", "session", "file", "where", "kind", "severity", "message", "count")


def info(index: ViewerIndex) -> dict[str, Any]:
    """Sessions (each with its files), the warnings, and totals of what was lost."""
    con = index.cursor()
    missing: list[str] = []
    sessions = read_rows(con, "sessions", SESSION_COLUMNS, missing)
    files = read_rows(con, "files", FILE_COLUMNS, missing)
    warnings = read_rows(con, "warnings", WARNING_COLUMNS, missing)
    for s in sessions:
        s["files"] = [f for f in files if (f.get("run"), f.get("rank"), f.get("session"))
                      == (s.get("run"), s.get("rank"), s.get("session"))]
        s.update(_clock(s))
    damaged = [f for f in files if f.get("status", "ok") != "ok"]
    return {
        "viewer_version": __version__,
        "dataset": str(index.dataset.path),
        "t0_ns": str(index.t0_ns),
        "span_ns": index.span_ns,
        "sessions": sessions,
        "warnings": warnings,
        "damaged_files": damaged,
        "lost": {
            "dropped_events": sum(int(s.get("dropped_events") or 0) for s in sessions),
            "damaged_files": len(damaged),
            "warnings": sum(1 for w in warnings if w.get("severity", "warning") != "note"),
            "notes": sum(1 for w in warnings if w.get("severity") == "note"),
        },
        "missing": missing,
    }


def read_rows(
    con: duckdb.DuckDBPyConnection, table: str, wanted: tuple[str, ...], missing: list[str]
) -> list[dict[str, Any]]:
    """The rows of `table` with those of `wanted` it has; the others are named in `missing`."""
    try:
        have = {r[0] for r in con.execute(f'DESCRIBE "{table}"').fetchall()}
    except duckdb.Error:
        missing.append(f"{table} (the whole table)")
        return []
    columns = [c for c in wanted if c in have]
    missing.extend(f"{table}.{c}" for c in wanted if c not in have)
    if not columns:
        return []
    quoted = ", ".join(f'"{c}"' for c in columns)
    order = ", ".join(f'"{c}"' for c in ("run", "rank", "session") if c in have) or quoted
    cursor = con.execute(f'SELECT {quoted} FROM "{table}" ORDER BY {order}')
    return [{c: js_safe(v) for c, v in zip(columns, row, strict=True)} for row in cursor.fetchall()]


def _clock(session: dict[str, Any]) -> dict[str, Any]:
    """The profiler's start and stop (CLOCK_REALTIME) as UTC text, and the time between them."""
    start, stop = _ns(session.get("start_ns")), _ns(session.get("stop_ns"))
    return {
        "start_utc": _utc(start) if start > 0 else "",
        "stop_utc": _utc(stop) if stop > 0 else "",
        "profiled_ns": stop - start if start > 0 and stop >= start else None,
    }


def _ns(value: Any) -> int:
    """A clock reading (an int, or its string form beyond 2^53); -1 when not recorded."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return -1


def _utc(ts_ns: int) -> str:
    return datetime.fromtimestamp(ts_ns / 1e9, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")

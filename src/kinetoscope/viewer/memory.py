"""Memory pages: allocations from snapshots (for the allocator tab) and memory counters with peaks."""

from __future__ import annotations

from typing import Any

from kinetoscope.viewer.index import ViewerIndex
from kinetoscope.viewer.queries import js_safe

MAX_ALLOCATIONS = 1500
MAX_POINTS = 1200


def allocation_sources(index: ViewerIndex) -> list[dict[str, Any]]:
    """The (run, rank, device) triples that have allocations."""
    rows = index.cursor().execute("""SELECT run, rank, device, count(*), max(size_bytes) FROM allocations
                                     GROUP BY ALL ORDER BY ALL""").fetchall()
    return [{"run": r, "rank": k, "device": d, "count": n, "largest_bytes": m} for r, k, d, n, m in rows]


def allocations(index: ViewerIndex, run: str, rank: int, device: int) -> dict[str, Any]:
    """The largest allocations one by one (by size x lifetime) and the rest as one total over time.

    Times are offsets from the run start; `free` is null for blocks still live at the end, and a block
    allocated before recording began (`alloc_ts_ns` -1) starts at the run start.
    """
    end = index.span_ns
    con = index.cursor()
    con.execute("""CREATE OR REPLACE TEMP TABLE a AS
                   SELECT row_number() OVER (ORDER BY alloc_ts_ns, addr) - 1 AS i, addr, size_bytes AS size,
                          CASE WHEN alloc_ts_ns < 0 THEN 0 ELSE alloc_ts_ns - ? END AS alloc,
                          CASE WHEN free_ts_ns < 0 THEN NULL ELSE free_ts_ns - ? END AS free,
                          stack_id, event_id
                   FROM allocations WHERE run = ? AND rank = ? AND device = ?""",
                [index.t0_ns, index.t0_ns, run, rank, device])
    con.execute("""CREATE OR REPLACE TEMP TABLE big AS SELECT i FROM a
                   ORDER BY size::DOUBLE * (coalesce(free, ?) - alloc) DESC LIMIT ?""", [end, MAX_ALLOCATIONS])
    cols = ("i", "addr", "size", "alloc", "free", "stack_id", "event_id")
    shown = [dict(zip(cols, map(js_safe, r), strict=True)) for r in con.execute(
        "SELECT i, addr, size, alloc, free, stack_id, event_id FROM a WHERE i IN (SELECT i FROM big) ORDER BY i"
    ).fetchall()]
    rest = con.execute("""
        WITH d AS (SELECT alloc AS ts, size AS delta FROM a WHERE i NOT IN (SELECT i FROM big)
                   UNION ALL SELECT free, -size FROM a WHERE free IS NOT NULL AND i NOT IN (SELECT i FROM big)),
        c AS (SELECT ts, sum(sum(delta)) OVER (ORDER BY ts) AS total FROM d GROUP BY ts)
        SELECT ts, total FROM c ORDER BY ts""").fetchall()
    total = con.execute("SELECT count(*) FROM a").fetchone()
    return {"run": run, "rank": rank, "device": device, "end": end, "allocations": shown,
            "total_count": int(total[0]) if total else 0, "others": _thin(rest)}


def _thin(points: list[tuple[Any, Any]]) -> dict[str, list[Any]]:
    """Keeps at most MAX_POINTS step points, the highest of each stride (so peaks survive)."""
    stride = max(1, len(points) // MAX_POINTS + 1)
    kept = [max(points[i:i + stride], key=lambda p: p[1]) for i in range(0, len(points), stride)]
    return {"ts": [int(p[0]) for p in kept], "bytes": [int(p[1]) for p in kept]}


def memory_series(index: ViewerIndex) -> dict[str, Any]:
    """Every counter measured in bytes (host and device memory per rank), thinned, with its peak."""
    con = index.cursor()
    tracks = con.execute("""SELECT counter_id, run, rank, name, device FROM counter_tracks WHERE unit = 'bytes'
                            ORDER BY run, rank, device, name""").fetchall()
    series = []
    for cid, run, rank, name, device in tracks:
        points = con.execute("SELECT ts, value FROM cv WHERE cid = ? ORDER BY ts", [cid]).fetchall()
        peak = max(points, key=lambda p: p[1]) if points else (0, 0.0)
        stride = max(1, len(points) // MAX_POINTS + 1)
        kept = [max(points[i:i + stride], key=lambda p: p[1]) for i in range(0, len(points), stride)]
        series.append({"id": cid, "run": run, "rank": rank, "name": name, "device": device,
                       "ts": [p[0] for p in kept], "bytes": [p[1] for p in kept],
                       "peak": {"ts": peak[0], "bytes": peak[1]}})
    return {"series": series}

"""Memory pages: allocations from snapshots (for the allocator tab) and memory counters with peaks."""

from __future__ import annotations

from typing import Any

from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying.queries import js_safe

MAX_ALLOCATIONS = 1500
MAX_POINTS = 1200
MAX_LISTED = 200


# Blocks rebuilt from the trace's allocator events (``[memory]`` instants with ``Addr`` and ``Bytes``):
# an allocation is paired with the next event of its address on its device when that frees the same
# size; a free with no allocation before it is a block allocated before the trace began (-1). A block's
# stack is the Python frame active at its allocation event (``events.stack_id``, with_stack=True).
EVENT_BLOCKS = """
    WITH m AS (
      SELECT run, rank, device, ts_ns, id, stack_id,
             try_cast(json_extract(args, '$.Addr') AS BIGINT) AS addr,
             try_cast(json_extract(args, '$.Bytes') AS BIGINT) AS bytes
      FROM events WHERE kind = 'allocation' {where}),
    p AS (
      SELECT *, lead(bytes) OVER w AS next_bytes, lead(ts_ns) OVER w AS next_ts, lag(bytes) OVER w AS prev_bytes
      FROM m WHERE addr IS NOT NULL AND bytes IS NOT NULL AND bytes <> 0
      WINDOW w AS (PARTITION BY run, rank, device, addr ORDER BY ts_ns, id))
    SELECT run, rank, device, addr, bytes AS size_bytes, ts_ns AS alloc_ts_ns,
           CASE WHEN next_bytes = -bytes THEN next_ts ELSE -1 END AS free_ts_ns, stack_id, id AS event_id
    FROM p WHERE bytes > 0
    UNION ALL
    SELECT run, rank, device, addr, -bytes, -1, ts_ns, -1::BIGINT, id
    FROM p WHERE bytes < 0 AND (prev_bytes IS NULL OR prev_bytes <> -bytes)"""


def _blocks(origin: str) -> str:
    """The SQL of one (run, rank, device)'s blocks (three parameters): from the snapshots' table or
    from the allocator events."""
    if origin == "snapshot":
        return """SELECT run, rank, device, addr, size_bytes, alloc_ts_ns, free_ts_ns, stack_id, event_id
                  FROM allocations WHERE run = ? AND rank = ? AND device = ?"""
    return EVENT_BLOCKS.format(where="AND run = ? AND rank = ? AND device = ?")


def allocation_sources(index: ViewerIndex) -> list[dict[str, Any]]:
    """The (run, rank, device) triples that have allocations: from snapshots, else from the trace's
    allocator events where they carry addresses (``origin`` says which)."""
    con = index.cursor()
    snap = con.execute("""SELECT run, rank, device, count(*), max(size_bytes) FROM allocations
                          GROUP BY ALL ORDER BY ALL""").fetchall()
    have = {(r, k, d) for r, k, d, _, _ in snap}
    found = con.execute(f"SELECT run, rank, device, count(*), max(size_bytes) FROM ({EVENT_BLOCKS.format(where='')})"
                        " GROUP BY ALL ORDER BY ALL").fetchall()
    rows = [(*r, "snapshot") for r in snap] + [(*r, "events") for r in found if (r[0], r[1], r[2]) not in have]
    return [{"run": r, "rank": k, "device": d, "count": n, "largest_bytes": m, "origin": o}
            for r, k, d, n, m, o in sorted(rows, key=lambda x: (x[0], x[1], x[2]))]


def _origin(index: ViewerIndex, run: str, rank: int, device: int) -> str:
    found = index.cursor().execute("SELECT count(*) FROM allocations WHERE run = ? AND rank = ? AND device = ?",
                                   [run, rank, device]).fetchone()
    return "snapshot" if found and found[0] else "events"


def allocations(index: ViewerIndex, run: str, rank: int, device: int) -> dict[str, Any]:
    """The largest allocations one by one (by size x lifetime) and the rest as one total over time.

    Times are offsets from the run start; `free` is null for blocks still live at the end, and a block
    allocated before recording began (`alloc_ts_ns` -1) starts at the run start.
    """
    end = index.span_ns
    con = index.cursor()
    origin = _origin(index, run, rank, device)
    con.execute(f"""CREATE OR REPLACE TEMP TABLE a AS
                   SELECT row_number() OVER (ORDER BY alloc_ts_ns, addr) - 1 AS i, addr, size_bytes AS size,
                          CASE WHEN alloc_ts_ns < 0 THEN 0 ELSE alloc_ts_ns - ? END AS alloc,
                          CASE WHEN free_ts_ns < 0 THEN NULL ELSE free_ts_ns - ? END AS free,
                          stack_id, event_id
                   FROM ({_blocks(origin)})""", [index.t0_ns, index.t0_ns, run, rank, device])
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
    return {"run": run, "rank": rank, "device": device, "end": end, "origin": origin, "allocations": shown,
            "total_count": int(total[0]) if total else 0, "others": _thin(rest),
            "baseline_bytes": _baseline(con, index.t0_ns, (run, rank, device)) if origin == "events" else 0}


def _baseline(con: Any, t0_ns: int, where: tuple[str, int, int]) -> int:
    """Bytes resident before the trace that no block shows: the allocator's ``Total Allocated`` at its
    first ``[memory]`` event, less the bytes of the blocks live just after it (blocks freed during the
    trace but allocated before it included). A snapshot lists every resident block: 0 there."""
    found = con.execute("""
        WITH first AS (
          SELECT ts_ns - ? AS ts, try_cast(json_extract(args, '$."Total Allocated"') AS BIGINT) AS total
          FROM events WHERE kind = 'allocation' AND run = ? AND rank = ? AND device = ?
            AND try_cast(json_extract(args, '$."Total Allocated"') AS BIGINT) IS NOT NULL
          ORDER BY ts_ns, id LIMIT 1)
        SELECT first.total - coalesce((SELECT sum(size) FROM a
                                       WHERE a.alloc <= first.ts AND (a.free IS NULL OR a.free > first.ts)), 0)
        FROM first""", [t0_ns, *where]).fetchone()
    return max(int(found[0]), 0) if found and found[0] is not None else 0


def largest(index: ViewerIndex, run: str, rank: int, device: int, *, min_bytes: int = 0, stack_text: str = "",
            limit: int = MAX_LISTED) -> dict[str, Any]:
    """The largest allocations of at least `min_bytes` whose allocating stack contains `stack_text`
    (any case; every frame's name and file:line), largest first, each with its stack as text."""
    con = index.cursor()
    origin = _origin(index, run, rank, device)
    rows = con.execute(f"""
        WITH RECURSIVE b AS ({_blocks(origin)}),
        s(root, cur, hop, text) AS (
          SELECT DISTINCT stack_id, stack_id, 0, '' FROM b WHERE stack_id >= 0
          UNION ALL
          SELECT s.root, f.parent_id, s.hop + 1, s.text || f.name
                 || CASE WHEN f.file = '' THEN '' ELSE ' ' || f.file END
                 || CASE WHEN f.line < 0 THEN '' ELSE ':' || f.line END || chr(10)
          FROM s JOIN frames f ON f.stack_id = s.cur AND f.run = ? AND f.rank = ? WHERE s.hop < 64),
        stacks AS (SELECT root, arg_max(text, hop) AS text FROM s GROUP BY root),
        hits AS (
          SELECT b.addr, b.size_bytes, b.alloc_ts_ns, b.free_ts_ns, b.stack_id, b.event_id,
                 coalesce(stacks.text, '') AS stack
          FROM b LEFT JOIN stacks ON stacks.root = b.stack_id
          WHERE b.size_bytes >= ? AND (? = '' OR contains(lower(coalesce(stacks.text, '')), lower(?))))
        SELECT *, count(*) OVER () FROM hits ORDER BY size_bytes DESC, alloc_ts_ns LIMIT ?""",
        [run, rank, device, run, rank, min_bytes, stack_text, stack_text, limit]).fetchall()
    t0 = index.t0_ns
    listed = [{"addr": js_safe(a), "size": n, "alloc": at - t0 if at >= 0 else None,
               "free": fr - t0 if fr >= 0 else None, "stack_id": sid, "event_id": js_safe(eid),
               "stack": text.rstrip("\n")} for a, n, at, fr, sid, eid, text, _ in rows]
    return {"origin": origin, "matching": int(rows[0][-1]) if rows else 0, "allocations": listed}


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

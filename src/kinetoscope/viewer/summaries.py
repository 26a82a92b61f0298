"""The summary page's data: per-rank step times, busy/idle, top kernels and ops, communication overlap.

These are the viewer's own queries until the analyses registry is available to call; each returns
plain rows, rebased to the run start where it carries a time.
"""

from __future__ import annotations

from typing import Any

from kinetoscope.viewer.index import ViewerIndex
from kinetoscope.viewer.queries import _rows

COLLECTIVE_PATTERN = "%nccl%|%gloo%|%all_reduce%|%allreduce%|%all_gather%|%reduce_scatter%|%alltoall%|%sendrecv%"


def summary(index: ViewerIndex) -> dict[str, Any]:
    con = index.cursor()
    return {
        "steps": _rows(con, """
            SELECT t.run, t.rank, n.name, ev.ts, ev.dur FROM ev JOIN names n ON n.name_id = ev.name
            JOIN tracks t ON t.track_id = ev.track
            WHERE n.name LIKE 'ProfilerStep#%' AND t.layer = 'framework' ORDER BY t.run, t.rank, ev.ts"""),
        "busy": _rows(con, """
            WITH span AS (SELECT t.run, t.rank, min(ev.ts) AS lo, max(ev.ts + ev.dur) AS hi FROM ev
                          JOIN tracks t ON t.track_id = ev.track GROUP BY t.run, t.rank)
            SELECT t.track_id AS track, t.run, t.rank, t.layer, t.device, t.stream, t.tid,
                   sum(ev.dur) FILTER (WHERE ev.depth = 0) AS busy_ns, any_value(span.hi - span.lo) AS span_ns
            FROM ev JOIN tracks t ON t.track_id = ev.track JOIN span ON span.run = t.run AND span.rank = t.rank
            GROUP BY ALL ORDER BY t.track_id"""),
        "top_kernels": _top(index, "device"),
        "top_ops": _top(index, "framework", "AND c.category = 'cpu_op'"),
        "communication": _communication(index),
    }


def _top(index: ViewerIndex, layer: str, extra: str = "") -> list[dict[str, Any]]:
    return _rows(index.cursor(), f"""
        SELECT n.name, count(*) AS count, sum(ev.dur) AS total_ns, avg(ev.dur) AS mean_ns FROM ev
        JOIN names n ON n.name_id = ev.name JOIN tracks t ON t.track_id = ev.track
        JOIN categories c ON c.cat_id = ev.cat
        WHERE t.layer = ? {extra} GROUP BY n.name ORDER BY total_ns DESC LIMIT 15""", [layer])


def _communication(index: ViewerIndex) -> list[dict[str, Any]]:
    """Per rank: time in collective kernels and how much of it overlaps compute kernels."""
    patterns = COLLECTIVE_PATTERN.split("|")
    like = " OR ".join("lower(n.name) LIKE ?" for _ in patterns)
    con = index.cursor()
    con.execute(f"""CREATE OR REPLACE TEMP TABLE k AS
        SELECT t.run, t.rank, t.stream, ev.ts, ev.ts + ev.dur AS te, ({like}) AS comm FROM ev
        JOIN names n ON n.name_id = ev.name JOIN tracks t ON t.track_id = ev.track WHERE t.layer = 'device'""",
                patterns)
    return _rows(con, """
        WITH c AS (SELECT * FROM k WHERE comm), p AS (SELECT * FROM k WHERE NOT comm),
        o AS (SELECT c.run, c.rank, c.ts, c.te, sum(least(c.te, p.te) - greatest(c.ts, p.ts)) AS ov
              FROM c JOIN p ON p.run = c.run AND p.rank = c.rank AND p.ts < c.te AND p.te > c.ts
              GROUP BY c.run, c.rank, c.ts, c.te)
        SELECT c.run, c.rank, sum(c.te - c.ts) AS comm_ns,
               sum(least(coalesce(o.ov, 0), c.te - c.ts)) AS overlapped_ns, count(*) AS collectives
        FROM c LEFT JOIN o ON o.run = c.run AND o.rank = c.rank AND o.ts = c.ts AND o.te = c.te
        GROUP BY c.run, c.rank ORDER BY c.run, c.rank""")

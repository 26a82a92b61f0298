"""The viewer's read queries besides the window and search: metadata, details, flows, ranges, counters.

Every time that leaves here is an offset in ns from the run start (`ViewerIndex.t0_ns`); integers
that a browser's float64 could not hold exactly are sent as strings. All SQL takes its values as
parameters.
"""

from __future__ import annotations

import json
from typing import Any

import duckdb

from kinetoscope.model import flows, kinds
from kinetoscope.model.kinds import KIND_CODES
from kinetoscope.viewer.indexing.index import ViewerIndex

JS_SAFE_INT = 2**53 - 1
CHAIN_HOPS = 6
# The flow kind from a runtime call to the device work it launched (``model.flows``; the walk's order:
# at each hop, the calls that launched device work first, so ``]`` follows the work, not a query call).
RUNTIME_DEVICE = flows.LAUNCH
CHAIN_LIMIT = 300


def js_safe(value: Any) -> Any:
    """Integers beyond float64's exact range become strings."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > JS_SAFE_INT:
        return str(value)
    return value


def js_safe_tree(value: Any) -> Any:
    """``js_safe`` through dicts and lists (event ids beyond 2^53 become strings)."""
    if isinstance(value, dict):
        return {k: js_safe_tree(v) for k, v in value.items()}
    if isinstance(value, list):
        return [js_safe_tree(v) for v in value]
    return js_safe(value)


def _rows(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
    cursor = con.execute(sql, params or [])
    names = [d[0] for d in cursor.description or []]
    return [{n: js_safe(v) for n, v in zip(names, row, strict=True)} for row in cursor.fetchall()]


def overlap_sql(index: ViewerIndex, start_ns: int, end_ns: int, columns: str = "*") -> tuple[str, list[Any]]:
    """A SELECT of index events overlapping [start, end): one part per duration class, so zone maps prune."""
    parts, params = [], []
    for lvl in range(len(index.levels.bounds_ns) + 1):
        parts.append(f"SELECT {columns} FROM ev WHERE lvl = ? AND ts >= ? AND ts < ? AND ts + dur > ?")
        params += [lvl, start_ns - index.levels.lookback_ns(lvl), end_ns, start_ns]
    return " UNION ALL ".join(parts), params


def meta(index: ViewerIndex) -> dict[str, Any]:
    con = index.cursor()
    return {
        "t0_ns": str(index.t0_ns), "span_ns": index.span_ns, "event_count": index.event_count,
        "runs": [r[0] for r in con.execute("SELECT DISTINCT run FROM view_tracks ORDER BY run").fetchall()],
        "tracks": _rows(con, "SELECT track_id AS id, run, rank, session, pid, layer, name, tid, device, stream, events,"
                             " lanes, ops_lanes FROM view_tracks ORDER BY track_id"),
        "counters": _rows(con, "SELECT counter_id AS id, run, rank, name, unit, device, samples, min_value, max_value,"
                               " first_ts, last_ts FROM counter_tracks ORDER BY counter_id"),
        "sessions": _rows(con, "SELECT run, rank, session, host, pid, world_size FROM sessions ORDER BY run, rank"),
        "warnings": warnings(con),
        "with_stacks": flows.recorded_with_stacks(_python_frames(con)),
        "flow_kinds": {"launch": flows.LAUNCH, "op_to_call": flows.FRAMEWORK_RUNTIME},
    }


def _python_frames(con: duckdb.DuckDBPyConnection) -> int:
    """Whether the index holds a Python frame (1) or not (0): the first one is enough."""
    found = con.execute("SELECT count(*) FROM (SELECT 1 FROM ev WHERE kind = ? LIMIT 1)",
                        [KIND_CODES[kinds.PYTHON]]).fetchone()
    return int(found[0]) if found else 0


def warnings(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """Everything lost or doubtful: the warnings table plus files whose status is not ok."""
    found = _rows(con, """SELECT run, rank, session, file, "where", kind, severity, message, count FROM warnings
                          WHERE kind <> 'info' ORDER BY run, rank, file""")
    seen = {(w["run"], w["rank"], w["file"]) for w in found}
    for f in _rows(con, "SELECT run, rank, session, name, status FROM files WHERE status <> 'ok' ORDER BY run, rank"):
        if (f["run"], f["rank"], f["name"]) not in seen:
            found.append({"run": f["run"], "rank": f["rank"], "session": f["session"], "file": f["name"], "where": "",
                          "kind": f["status"], "severity": "warning", "message": f"{f['name']} is {f['status']}",
                          "count": 0})
    return found


def event_brief(index: ViewerIndex, ids: list[int]) -> dict[int, dict[str, Any]]:
    """Where each event is drawn: track, lane, ts, dur, name, layer, and `ops_lane`, its lane when the
    track's Python frames are hidden (-1 for a Python frame or a track without them)."""
    if not ids:
        return {}
    rows = index.cursor().execute(
        """SELECT ev.id, ev.track, ev.lane, ev.ts, ev.dur, names.name, view_tracks.layer,
                  coalesce(ev_ops.lane, -1) AS ops_lane FROM ev
           JOIN names ON names.name_id = ev.name JOIN view_tracks ON view_tracks.track_id = ev.track
           LEFT JOIN (SELECT id, track, lane FROM ev_ops WHERE list_contains(?, id)) ev_ops
             ON ev_ops.id = ev.id AND ev_ops.track = ev.track
           WHERE list_contains(?, ev.id)""", [ids, ids]).fetchall()
    keys = ("id", "track", "lane", "ts", "dur", "name", "layer", "ops_lane")
    return {int(r[0]): {k: js_safe(v) for k, v in zip(keys, r, strict=True)} for r in rows}


def event_details(index: ViewerIndex, event_id: int) -> dict[str, Any] | None:
    brief = event_brief(index, [event_id]).get(event_id)
    if brief is None:
        return None
    con = index.cursor()
    found_track = con.execute("SELECT run, rank FROM view_tracks WHERE track_id = ?", [brief["track"]]).fetchone()
    run, rank = found_track or ("", 0)
    found = _rows(con, "SELECT * FROM events WHERE run = ? AND rank = ? AND id = ?", [run, rank, event_id])
    fields = found[0] if found else {}
    args_text = str(fields.pop("args", "") or "")
    details = {
        **brief, "run": run, "rank": rank, "fields": fields, "args": _parse_args(args_text),
        "stack": stack(index, str(run), int(rank), int(fields.get("stack_id", -1) or -1)),
    }
    compiled = provenance(index, str(run), int(rank), str(fields.get("session", "")), str(brief["name"]))
    if compiled:
        details["provenance"] = compiled
    return details


def provenance(index: ViewerIndex, run: str, rank: int, session: str, name: str) -> list[dict[str, Any]]:
    """The session's compiled code of this name (``kernels`` table): per entry its files and, per kernel it
    stands for (itself, or every kernel and extern call of a graph), the graph nodes and model source lines."""
    found = index.cursor().execute(
        "SELECT kind, graph, files, provenance FROM kernels WHERE run = ? AND rank = ? AND session = ? AND name = ?"
        " ORDER BY graph, kind", [run, rank, session, name]).fetchall()
    entries = []
    for kind, graph, files_text, provenance_text in found:
        tracked = _parse_json(provenance_text)
        if not isinstance(tracked, dict):
            tracked = {}
        per_kernel = tracked if kind == "graph" else ({name: tracked} if tracked else {})
        entries.append({
            "kind": kind, "graph": graph, "files": _parse_json(files_text) or [],
            "kernels": [{"kernel": kernel, **_kernel_provenance(p)} for kernel, p in sorted(per_kernel.items())],
        })
    return entries


def _kernel_provenance(tracked: Any) -> dict[str, Any]:
    tracked = tracked if isinstance(tracked, dict) else {}
    sources = [s for s in tracked.get("source", []) if isinstance(s, dict)]
    return {
        "post_grad_nodes": [str(n) for n in tracked.get("post_grad_nodes", [])],
        "pre_grad_nodes": [str(n) for n in tracked.get("pre_grad_nodes", [])],
        "source": [{"file": str(s.get("file", "")), "line": s.get("line", -1) if isinstance(s.get("line"), int) else -1,
                    "function": str(s.get("function", "")), "code": str(s.get("code", ""))} for s in sources],
    }


def _parse_json(text: Any) -> Any:
    try:
        return json.loads(str(text)) if text else None
    except ValueError:
        return None


def _parse_args(text: str) -> Any:
    if not text:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return {"(unparsed)": text}


def stack(index: ViewerIndex, run: str, rank: int, stack_id: int) -> list[dict[str, Any]]:
    """The Python stack of `stack_id`, innermost frame first."""
    if stack_id < 0:
        return []
    return _rows(index.cursor(), """
        WITH RECURSIVE s(stack_id, parent_id, name, file, line, hop) AS (
          SELECT stack_id, parent_id, name, file, line, 0 FROM frames WHERE run = ? AND rank = ? AND stack_id = ?
          UNION ALL
          SELECT f.stack_id, f.parent_id, f.name, f.file, f.line, s.hop + 1
          FROM frames f JOIN s ON f.stack_id = s.parent_id AND f.run = ? AND f.rank = ? WHERE s.hop < 256)
        SELECT name, file, line FROM s ORDER BY hop""", [run, rank, stack_id, run, rank])


def dependency_chain(index: ViewerIndex, event_id: int) -> dict[str, Any]:
    """Events upstream and downstream of `event_id` along flows, with the edges between them."""
    con = index.cursor()
    edges: dict[tuple[int, int], str] = {}
    hops: dict[str, dict[int, int]] = {"upstream": {}, "downstream": {}}
    for direction, (table, near, far) in {"upstream": ("fl_dst", "dst", "src"),
                                          "downstream": ("fl_src", "src", "dst")}.items():
        frontier, seen = [event_id], {event_id}
        for hop in range(1, CHAIN_HOPS + 1):
            if not frontier or len(seen) > CHAIN_LIMIT:
                break
            found = con.execute(f"SELECT src, dst, kind FROM {table} WHERE list_contains(?, {near})",
                                [frontier]).fetchall()
            frontier = []
            for src, dst, kind in found:
                edges[(int(src), int(dst))] = str(kind)
                other = int(src if far == "src" else dst)
                if other not in seen:
                    seen.add(other)
                    hops[direction][other] = hop
                    frontier.append(other)
    briefs = event_brief(index, [event_id, *hops["upstream"], *hops["downstream"]])
    launches = {src for (src, _), kind in edges.items() if kind == RUNTIME_DEVICE}
    return {
        "event": briefs.get(event_id),
        **{d: sorted(({**briefs[i], "hop": h} for i, h in found.items() if i in briefs),
                     key=lambda e: (e["hop"], int(e["id"]) not in launches, e["ts"], int(e["id"])))
           for d, found in hops.items()},
        "edges": [{"src": s, "dst": d, "kind": k} for (s, d), k in edges.items() if s in briefs and d in briefs],
    }


# Kinds counted in a range summary (``model.kinds``): framework ops, device work, and the host work that keeps
# a thread busy. Python frames, annotations, step markers and device annotations only label time.
_OP_KINDS = [KIND_CODES[kinds.OP]]
_DEVICE_WORK_KINDS = [KIND_CODES[k] for k in kinds.DEVICE_WORK_KINDS]
_BUSY_KINDS = [*_DEVICE_WORK_KINDS, *(KIND_CODES[k] for k in (kinds.OP, kinds.RUNTIME_CALL, kinds.DRIVER, kinds.SYNC))]
# Time covered by a group's intervals, each instant counted once however the rows nest or overlap.
_UNION_SQL = """
    SELECT {key}, count(*) AS count, sum(greatest(0, b - greatest(a, coalesce(reach, a)))) AS total_ns
    FROM (SELECT {key}, a, b, max(b) OVER (PARTITION BY {key} ORDER BY a, b
                                          ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
          FROM sel WHERE list_contains(?, kind))
    GROUP BY {key}"""


def range_summary(index: ViewerIndex, start_ns: int, end_ns: int, tracks: list[int]) -> dict[str, Any]:
    """Top ops and device work by time inside [start, end), and busy time per track, counted by kind.

    Times are unions per name (a recursive op is not counted twice), clipped to the range."""
    inner, params = overlap_sql(index, start_ns, end_ns, "track, name, kind, ts, dur")
    con = index.cursor()
    con.execute(f"""CREATE OR REPLACE TEMP TABLE sel AS
                    SELECT track, name, kind, greatest(ts, ?) AS a, least(ts + dur, ?) AS b
                    FROM ({inner}) WHERE list_contains(?, track)""", [start_ns, end_ns, *params, tracks])
    top = f"""SELECT names.name, any_value(kinds.kind) AS kind, sum(u.count) AS count, sum(u.total_ns) AS total_ns
              FROM ({_UNION_SQL.format(key="name, kind")}) u JOIN names ON names.name_id = u.name
              JOIN kinds ON kinds.kind_id = u.kind GROUP BY names.name ORDER BY total_ns DESC LIMIT 15"""
    busy = f"SELECT track, total_ns AS busy_ns, count FROM ({_UNION_SQL.format(key='track')}) ORDER BY track"
    return {
        "start": start_ns, "end": end_ns,
        "top_ops": _rows(con, top, [_OP_KINDS]),
        "top_kernels": _rows(con, top, [_DEVICE_WORK_KINDS]),
        "busy": _rows(con, busy, [_BUSY_KINDS]),
    }


def counter_window(index: ViewerIndex, start_ns: int, end_ns: int, width_px: int, ids: list[int], *,
                   shifts_ns: list[int] | None = None) -> dict[str, Any]:
    """Per counter: min, max and last value per pixel, plus the sample just before the window.
    `shifts_ns`: ns added to each of `ids`' times (same order; missing: 0), one query per distinct shift."""
    px_ns = max(1.0, (end_ns - start_ns) / max(width_px, 1))
    by_shift: dict[int, list[int]] = {}
    for i, cid in enumerate(ids):
        by_shift.setdefault(shifts_ns[i] if shifts_ns and i < len(shifts_ns) else 0, []).append(cid)
    series: dict[int, dict[str, list[float]]] = {}
    for shift, shifted in by_shift.items():
        for cid, ts, lo, hi, last in _counter_rows(index, start_ns - shift, end_ns - shift, px_ns, shifted):
            s = series.setdefault(int(cid), {"ts": [], "min": [], "max": [], "last": []})
            for key, value in (("ts", ts + shift), ("min", lo), ("max", hi), ("last", last)):
                s[key].append(value)
    return {"start": start_ns, "end": end_ns, "series": {str(k): v for k, v in series.items()}}


def _counter_rows(index: ViewerIndex, start_ns: int, end_ns: int, px_ns: float, ids: list[int]) -> list[Any]:
    return index.cursor().execute("""
        SELECT cid, min(ts) AS ts, min(value) AS lo, max(value) AS hi, arg_max(value, ts) AS last FROM (
          SELECT cid, ts, value FROM cv WHERE ts >= ? AND ts < ? AND list_contains(?, cid)
          UNION ALL
          SELECT cid, max(ts), arg_max(value, ts) FROM cv WHERE ts < ? AND list_contains(?, cid) GROUP BY cid)
        GROUP BY cid, floor((ts - ?) / ?) ORDER BY cid, ts""",
        [start_ns, end_ns, ids, start_ns, ids, start_ns, px_ns]).fetchall()


def op_at(index: ViewerIndex, run: str, rank: int, ts_ns: int) -> dict[str, Any] | None:
    """The deepest framework op running on `rank` at `ts_ns` (the op that made an allocation)."""
    inner, params = overlap_sql(index, ts_ns, ts_ns + 1, "id, track, lane, ts")
    found = index.cursor().execute(f"""
        SELECT o.id FROM ({inner}) o JOIN view_tracks t ON t.track_id = o.track
        WHERE t.layer = 'framework' AND t.run = ? AND t.rank = ? ORDER BY o.lane DESC, o.ts DESC LIMIT 1""",
        [*params, run, rank]).fetchone()
    return event_brief(index, [int(found[0])]).get(int(found[0])) if found else None

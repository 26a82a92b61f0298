"""Window queries with level of detail: what one screen of the timeline needs, never every event.

For a window [start, end) drawn `width_px` pixels wide, one pixel covers `px_ns`. Slices at
least a pixel wide (or as wide as the pyramid bucket used) come back one by one, and so do instants
(zero-length events, drawn as markers) once the view is zoomed in past the pyramid; shorter ones are
merged per track, lane and pixel into summary blocks (count, busy time, the longest event's
name). Zoomed out, the blocks come from the index's pre-aggregated pyramid; zoomed in, from the
events themselves. Both parts are capped, so a response stays small whatever the dataset size.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import duckdb
import numpy as np

from kinetoscope.viewer.indexing.index import ViewerIndex

MAX_SLICES = 40_000
MAX_BLOCKS = 60_000


@dataclass(frozen=True, kw_only=True)
class WindowRequest:
    start_ns: int
    end_ns: int
    width_px: int
    tracks: tuple[int, ...]
    ops_tracks: tuple[int, ...] = ()  # of `tracks`, those drawn without their Python frames (from `ev_ops`)
    # ns added to the times of each of `tracks` (same order; missing: 0): the viewer's clock alignment
    shifts_ns: tuple[int, ...] = ()

    @property
    def px_ns(self) -> float:
        return max(1.0, (self.end_ns - self.start_ns) / max(self.width_px, 1))


def query_window(index: ViewerIndex, req: WindowRequest) -> dict[str, Any]:
    """Slices and summary blocks for `req`, as columnar arrays with a string table."""
    if not req.tracks or req.end_ns <= req.start_ns:
        return _empty(req)
    con = index.cursor()
    bucket_ns = _pyramid_bucket(index, req.px_ns)
    ops = set(req.ops_tracks)
    found = []
    for shift_ns, shifted in _by_shift(req).items():
        parts = [(Source("ev", "lod"), [t for t in shifted if t not in ops]),
                 (Source("ev_ops", "lod_ops"), [t for t in shifted if t in ops])]
        moved = replace(req, start_ns=req.start_ns - shift_ns, end_ns=req.end_ns - shift_ns)
        found += [_shifted(_window_part(con, index, moved, bucket_ns, source=source, tracks=tracks), shift_ns)
                  for source, tracks in parts if tracks]
    slices, blocks = (_concat([f[i] for f in found]) for i in (0, 1))
    names = np.unique(np.concatenate([slices["name"], blocks["name"]])).astype(np.int64)
    strings = _names(con, names)
    # each name id's place in `names` (sorted, and holding every one of them): its index in `strings`
    slices["name"] = np.searchsorted(names, slices["name"]).astype(np.int64)
    blocks["name"] = np.searchsorted(names, blocks["name"]).astype(np.int64)
    return {
        "start_ns": req.start_ns, "end_ns": req.end_ns, "px_ns": req.px_ns, "bucket_ns": bucket_ns,
        "strings": strings,
        "slices": {k: v for k, v in slices.items() if k != "_truncated"},
        "blocks": {k: v for k, v in blocks.items() if k != "_truncated"},
        "truncated": bool(slices["_truncated"] or blocks["_truncated"]),
    }


def _by_shift(req: WindowRequest) -> dict[int, list[int]]:
    """`req`'s tracks by the shift of their times (one query per distinct shift: a rank's, or a host's)."""
    groups: dict[int, list[int]] = {}
    for i, track in enumerate(req.tracks):
        groups.setdefault(req.shifts_ns[i] if i < len(req.shifts_ns) else 0, []).append(track)
    return groups


def _shifted(part: tuple[dict[str, Any], dict[str, Any]], shift_ns: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """One part's slices and blocks with `shift_ns` added to their times."""
    slices, blocks = part
    if shift_ns:
        slices["ts"] = slices["ts"] + shift_ns
        blocks["ts"] = blocks["ts"] + shift_ns
        blocks["end"] = blocks["end"] + shift_ns
    return slices, blocks


@dataclass(frozen=True)
class Source:
    """The index tables a window reads: events and their pyramid (our own table names, never input)."""

    events: str
    pyramid: str


def _window_part(con: duckdb.DuckDBPyConnection, index: ViewerIndex, req: WindowRequest, bucket_ns: int, *,
                 source: Source, tracks: list[int]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Slices and blocks of `tracks` from one source."""
    min_dur = bucket_ns if bucket_ns else int(req.px_ns)
    slices = _slices(con, index, req, min_dur, instants=not bucket_ns, source=source, tracks=tracks)
    blocks = (_pyramid_blocks(con, req, bucket_ns, source, tracks) if bucket_ns
              else _raw_blocks(con, index, req, source, tracks))
    return slices, blocks


def _concat(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One part's columns, or several parts' joined (each already capped)."""
    if len(parts) == 1:
        return parts[0]
    out: dict[str, Any] = {k: np.concatenate([p[k] for p in parts]) for k in parts[0] if k != "_truncated"}
    out["_truncated"] = any(p["_truncated"] for p in parts)
    return out


def _empty(req: WindowRequest) -> dict[str, Any]:
    cols: dict[str, list[int]] = {k: [] for k in ("id", "track", "lane", "ts", "dur", "name")}
    blocks: dict[str, list[int]] = {k: [] for k in ("track", "lane", "ts", "end", "count", "busy", "name")}
    return {"start_ns": req.start_ns, "end_ns": req.end_ns, "px_ns": req.px_ns, "bucket_ns": 0, "strings": [],
            "slices": cols, "blocks": blocks, "truncated": False}


def _pyramid_bucket(index: ViewerIndex, px_ns: float) -> int:
    usable = [b for b in index.levels.pyramid_ns if b <= px_ns]
    return max(usable) if usable else 0


def _slices(con: duckdb.DuckDBPyConnection, index: ViewerIndex, req: WindowRequest, min_dur: int, *,
            instants: bool, source: Source, tracks: list[int]) -> dict[str, Any]:
    """Events at least `min_dur` long that overlap the window (one SELECT per duration class), and instants."""
    parts, params = [], []
    if instants:
        parts.append(f"SELECT id, track, lane, ts, dur, name FROM {source.events} WHERE lvl = 0 AND dur = 0"
                     " AND ts >= ? AND ts < ? AND list_contains(?, track)")
        params += [req.start_ns, req.end_ns, tracks]
    for lvl in range(len(index.levels.bounds_ns) + 1):
        if lvl < len(index.levels.bounds_ns) and index.levels.bounds_ns[lvl] <= min_dur:
            continue  # every event of this class is shorter than min_dur
        parts.append(f"SELECT id, track, lane, ts, dur, name FROM {source.events} WHERE lvl = ? AND ts >= ?"
                     " AND ts < ? AND ts + dur > ? AND dur >= ? AND list_contains(?, track)")
        params += [lvl, req.start_ns - index.levels.lookback_ns(lvl), req.end_ns, req.start_ns, min_dur, tracks]
    sql = " UNION ALL ".join(parts) + f" ORDER BY dur DESC LIMIT {MAX_SLICES + 1}"
    return _columns(con.execute(sql, params).fetchnumpy(), ("id", "track", "lane", "ts", "dur", "name"), MAX_SLICES)


def _raw_blocks(con: duckdb.DuckDBPyConnection, index: ViewerIndex, req: WindowRequest, source: Source,
               tracks: list[int]) -> dict[str, Any]:
    px = req.px_ns
    parts, params = [], []
    for lvl in range(len(index.levels.bounds_ns) + 1):
        if lvl > 0 and index.levels.bounds_ns[lvl - 1] > px:
            break  # every event of this class is at least a pixel long
        parts.append(f"SELECT track, lane, ts, dur, name FROM {source.events} WHERE lvl = ? AND ts >= ? AND ts < ?"
                     " AND ts + dur > ? AND dur < ? AND dur > 0 AND list_contains(?, track)")  # instants are slices
        params += [lvl, req.start_ns - index.levels.lookback_ns(lvl), req.end_ns, req.start_ns, px, tracks]
    sql = f"""
        SELECT track, lane, floor((ts - ?) / ?) AS px, min(ts) AS ts, max(ts + dur) AS "end", count(*) AS "count",
               sum(dur) AS busy, arg_max(name, dur) AS name
        FROM ({" UNION ALL ".join(parts)})
        GROUP BY track, lane, px"""
    return merged_islands(con.execute(sql, [req.start_ns, px, *params]).fetchnumpy())


def _pyramid_blocks(con: duckdb.DuckDBPyConnection, req: WindowRequest, bucket_ns: int, source: Source,
                    tracks: list[int]) -> dict[str, Any]:
    sql = f"""
        SELECT track, lane, floor((bucket * ? - ?) / ?) AS px, min(first_ts) AS ts, max(last_end) AS "end",
               sum(cnt) AS "count", sum(busy) AS busy, arg_max(top_name, top_dur) AS name
        FROM {source.pyramid}
        WHERE bucket_ns = ? AND bucket >= ? AND bucket <= ? AND list_contains(?, track) AND last_end > ?
        GROUP BY track, lane, px"""
    params = [bucket_ns, req.start_ns, req.px_ns, bucket_ns, req.start_ns // bucket_ns - 1, req.end_ns // bucket_ns,
              tracks, req.start_ns]
    return merged_islands(con.execute(sql, params).fetchnumpy())


BLOCK_COLUMNS = ("track", "lane", "ts", "end", "count", "busy", "name")


def merged_islands(per_pixel: dict[str, Any]) -> dict[str, Any]:
    """Merges runs of consecutive busy pixels on one track and lane into one block (the longest-busy
    pixel's name), capped at MAX_BLOCKS. In numpy: DuckDB's window function over the pixels took as
    long as aggregating them (10 of 20 ms for a screen of the public V100 trace)."""
    cols = {k: np.asarray(per_pixel[k]).astype(np.int64) for k in ("track", "lane", "px", *BLOCK_COLUMNS[2:])}
    order = np.lexsort((cols["px"], cols["lane"], cols["track"]))
    cols = {k: v[order] for k, v in cols.items()}
    track, lane, px = cols["track"], cols["lane"], cols["px"]
    new = np.ones(len(px), bool)
    new[1:] = (track[1:] != track[:-1]) | (lane[1:] != lane[:-1]) | (px[1:] != px[:-1] + 1)
    starts = np.flatnonzero(new)
    if not len(starts):
        return _columns({k: v for k, v in cols.items() if k in BLOCK_COLUMNS}, BLOCK_COLUMNS, MAX_BLOCKS)
    run = np.cumsum(new) - 1
    busiest = np.lexsort((-cols["busy"], run))[starts]  # each run's first pixel once sorted by busy time, most first
    blocks = {"track": track[starts], "lane": lane[starts], "ts": np.minimum.reduceat(cols["ts"], starts),
              "end": np.maximum.reduceat(cols["end"], starts), "count": np.add.reduceat(cols["count"], starts),
              "busy": np.add.reduceat(cols["busy"], starts), "name": cols["name"][busiest]}
    return _columns(blocks, BLOCK_COLUMNS, MAX_BLOCKS)


def _columns(rows: dict[str, Any], names: tuple[str, ...], cap: int) -> dict[str, Any]:
    out: dict[str, Any] = {n: np.asarray(rows[n])[:cap].astype(np.int64) for n in names}
    out["_truncated"] = len(rows[names[0]]) > cap
    return out


def _names(con: duckdb.DuckDBPyConnection, ids: np.ndarray) -> list[str]:
    if not len(ids):
        return []
    rows = con.execute("SELECT name_id, name FROM names WHERE name_id IN (SELECT unnest(?::INT[]))",
                       [ids.tolist()]).fetchall()
    lookup = dict(rows)
    return [str(lookup.get(int(i), "")) for i in ids]

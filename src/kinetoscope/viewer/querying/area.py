"""Area selections: a time range over chosen tracks, aggregated by name, kind and rank, and merged
into a flamegraph of its op and Python-frame tree.

Every time is clipped to the range. Self time is the model's rule (``model.ops.self_ns``) applied
to the clipped durations: an op keeps what its op-tree descendants (on any track of its thread:
runtime calls too) do not cover inside the range, so an area spanning the whole trace gives each
event its ``events.self_ns``. To get that right whatever tracks are chosen, the rows of every
track of the chosen tracks' sessions that overlap the range are read; only the chosen tracks' rows
are counted. This reads the dataset's ``events`` (for ``parent_id``), never the window path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from kinetoscope.model import kinds, ops
from kinetoscope.model.kinds import KIND_CODES
from kinetoscope.viewer.indexing.index import ViewerIndex

VIEWS = {
    "all": None,
    "ops": (KIND_CODES[kinds.OP],),
    "kernels": tuple(KIND_CODES[k] for k in kinds.DEVICE_WORK_KINDS),
}
AGGREGATE_LIMIT = 500
PIVOT_LIMIT = 10_000
# What a pivot groups by beyond the name, kind and rank every area row has: SQL over `e` (the dataset's
# events) and `near` (the row's viewer track); `arg` reads one key of the event's args.
PIVOT_KEYS = {
    "track": "near.track_id::VARCHAR",
    "category": "coalesce(e.category, '')",
    "arg": "coalesce(json_extract(e.args, ?)::VARCHAR, '')",
}
PIVOT_BY = ("name", "kind", "rank", *PIVOT_KEYS)
FLAME_NODE_LIMIT = 4000
KIND_NAMES = {code: kind for kind, code in KIND_CODES.items()}


class AreaError(ValueError):
    """The area's parameters cannot be answered (an unknown view, an empty range)."""


@dataclass(frozen=True)
class AreaRows:
    """The rows of the chosen tracks' sessions overlapping the range, with clipped times."""

    name: np.ndarray  # int64 codes into `names`
    kind: np.ndarray  # int64 kind codes
    rank: np.ndarray
    run: np.ndarray  # int64 codes into `runs`
    chosen: np.ndarray  # bool: on a chosen track
    parent: np.ndarray  # row position of the enclosing row, -1 at the top or when it lies outside
    clipped_ns: np.ndarray
    self_ns: np.ndarray
    names: list[str]
    runs: list[str]
    key: np.ndarray | None = None  # str: the pivot's grouping value of each row, when one was asked for


def load(index: ViewerIndex, start_ns: int, end_ns: int, tracks: list[int], *,
         key: str | None = None, arg: str = "") -> AreaRows:
    """Reads the rows the area needs (times are offsets from the run start, as in the viewer); with
    `key` (one of PIVOT_KEYS) each row's value of it too."""
    if end_ns <= start_ns:
        raise AreaError(f"the area's end ({end_ns}) must be after its start ({start_ns})")
    t0 = index.t0_ns
    key_sql = f"{PIVOT_KEYS[key]} AS key," if key else ""
    key_params = ['$."' + arg.replace('"', '\\"') + '"'] if key == "arg" else []
    found = index.cursor().execute(f"""
        WITH sessions AS (SELECT DISTINCT run, rank, session FROM view_tracks WHERE list_contains(?, track_id)),
             near AS (SELECT t.source_id, t.track_id, t.run, t.rank, list_contains(?, t.track_id) AS chosen
                      FROM view_tracks t JOIN sessions s ON s.run = t.run AND s.rank = t.rank AND s.session = t.session)
        SELECT e.id, e.parent_id, coalesce(k.kind_id, -1)::BIGINT AS kind, coalesce(n.name_id, -1)::BIGINT AS name,
               e.rank::BIGINT AS rank, (dense_rank() OVER (ORDER BY e.run) - 1)::BIGINT AS run, e.run AS run_name,
               near.chosen, {key_sql} e.ts_ns - ? AS ts, greatest(e.dur_ns, 0) AS dur
        FROM events e JOIN near ON e.run = near.run AND e.rank = near.rank AND e.track_id = near.source_id
        LEFT JOIN kinds k ON k.kind = e.kind
        LEFT JOIN names n ON n.name = coalesce(e.name, '')
        WHERE e.ts_ns < ? AND (e.ts_ns + greatest(e.dur_ns, 0) > ? OR (e.dur_ns <= 0 AND e.ts_ns >= ?))""",
        [tracks, tracks, *key_params, t0, t0 + end_ns, t0 + start_ns, t0 + start_ns]).fetchnumpy()
    ts, dur = np.asarray(found["ts"], np.int64), np.asarray(found["dur"], np.int64)
    clipped = np.maximum(np.minimum(ts + dur, end_ns) - np.maximum(ts, start_ns), 0)
    kind = np.asarray(found["kind"], np.int64)
    run = np.asarray(found["run"], np.int64)
    rank = np.asarray(found["rank"], np.int64)
    name = np.asarray(found["name"], np.int64)
    parent = _positions(np.asarray(found["id"], np.int64), np.asarray(found["parent_id"], np.int64), run, rank)
    runs = [""] * (int(run.max(initial=-1)) + 1)
    for code, text in zip(*np.unique(run, return_index=True), strict=True):
        runs[int(code)] = str(found["run_name"][text])
    wanted = np.unique(name).tolist()
    names = dict(index.cursor().execute("SELECT name_id, name FROM names WHERE list_contains(?, name_id)",
                                        [wanted]).fetchall())
    return AreaRows(name=name, kind=kind, rank=rank, run=run, chosen=np.asarray(found["chosen"], bool),
                    parent=parent, clipped_ns=clipped, self_ns=ops.self_ns(clipped, parent, kind),
                    names=[str(names.get(i, "")) for i in range(int(name.max(initial=-1)) + 1)], runs=runs,
                    key=np.asarray(found["key"], dtype=object).astype(str) if key else None)


def _group_keys(rows: AreaRows) -> np.ndarray:
    """One int per row for its (name, kind, run, rank): the aggregation's groups."""
    key = np.zeros(len(rows.name), np.int64)
    for col in (rows.name, rows.kind, rows.run, rows.rank):  # codes are small
        codes = np.unique(col, return_inverse=True)[1].reshape(-1)
        key = key * (int(codes.max(initial=0)) + 1) + codes
    return key


def _inside_same_key(parent: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Whether each row has an ancestor (through `parent`) with its own key."""
    inside = np.zeros(len(parent), bool)
    rows = np.arange(len(parent))
    up = parent.copy()
    while (live := np.flatnonzero(up >= 0)).size:
        inside[rows[live]] |= key[up[live]] == key[rows[live]]
        keep = live[~inside[rows[live]]]
        rows, up = rows[keep], parent[up[keep]]
    return inside


def _positions(ids: np.ndarray, parent_ids: np.ndarray, run: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Row position of each row's parent within its run and rank; -1 where the parent was not read."""
    out = np.full(len(ids), -1, np.int64)
    if not len(ids):
        return out
    group = run * (int(rank.max()) - int(rank.min()) + 1) + (rank - int(rank.min()))
    for g in np.unique(group):  # one pass per rank
        rows = np.flatnonzero(group == g)
        order = rows[np.argsort(ids[rows], kind="stable")]
        sorted_ids = ids[order]
        at = np.clip(np.searchsorted(sorted_ids, parent_ids[rows]), 0, len(order) - 1)
        hit = sorted_ids[at] == parent_ids[rows]
        out[rows[hit]] = order[at[hit]]
    return out


def aggregate(rows: AreaRows, view: str = "all") -> dict[str, Any]:
    """Per (name, kind, run, rank) of the chosen tracks: count, self, total, mean and max inside the area."""
    if view not in VIEWS:
        raise AreaError(f"unknown view {view!r}: expected one of {', '.join(VIEWS)}")
    kept_kinds = VIEWS[view]
    wanted = rows.chosen & (np.isin(rows.kind, kept_kinds) if kept_kinds is not None else True)
    at = np.flatnonzero(wanted)
    empty = {"view": view, "groups": 0, "rows": []}
    if not len(at):
        return empty
    every = _group_keys(rows)
    outer = ~_inside_same_key(rows.parent, every)
    uniq, group = np.unique(every[at], return_inverse=True)
    n = len(uniq)
    count = np.bincount(group, minlength=n)
    total = np.zeros(n, np.int64)
    own = np.zeros(n, np.int64)
    longest = np.zeros(n, np.int64)
    # a row inside another of its own group (a recursive Python frame, an op calling itself) is in
    # that one's time already: total counts the outermost only, so no total exceeds the time covered
    np.add.at(total, group, np.where(outer[at], rows.clipped_ns[at], 0))
    summed = np.zeros(n, np.int64)  # every row's time, for the mean of one call
    np.add.at(summed, group, rows.clipped_ns[at])
    np.add.at(own, group, rows.self_ns[at])
    np.maximum.at(longest, group, rows.clipped_ns[at])
    first = np.zeros(n, np.int64)
    first[group] = at  # any row of the group, for its name, kind, run and rank
    order = np.lexsort((np.arange(n), -own, -total))[:AGGREGATE_LIMIT]
    return {"view": view, "groups": int(n), "rows": [
        {"name": rows.names[rows.name[first[g]]], "kind": KIND_NAMES.get(int(rows.kind[first[g]]), "unknown"),
         "run": rows.runs[rows.run[first[g]]], "rank": int(rows.rank[first[g]]), "count": int(count[g]),
         "self_ns": int(own[g]), "total_ns": int(total[g]), "mean_ns": int(summed[g] // count[g]),
         "max_ns": int(longest[g])} for g in order.tolist()]}


def _kept(rows: AreaRows, view: str) -> np.ndarray:
    """Positions of the chosen tracks' rows that `view` keeps."""
    if view not in VIEWS:
        raise AreaError(f"unknown view {view!r}: expected one of {', '.join(VIEWS)}")
    kept_kinds = VIEWS[view]
    return np.flatnonzero(rows.chosen & (np.isin(rows.kind, kept_kinds) if kept_kinds is not None else True))


def pivot(index: ViewerIndex, start_ns: int, end_ns: int, tracks: list[int], *, view: str = "all",
          by: str = "name", arg: str = "") -> dict[str, Any]:
    """The area's rows grouped by one column (`PIVOT_BY`; for "arg", the value of the args key `arg`):
    per value count, self, total (a row inside another of its value counted once), mean and max inside
    the area, largest total first."""
    if by not in PIVOT_BY:
        raise AreaError(f"cannot group by {by!r}: expected one of {', '.join(PIVOT_BY)}")
    if by == "arg" and not arg.strip():
        raise AreaError("name the argument to group by (arg=Input Dims)")
    rows = load(index, start_ns, end_ns, tracks, key=by if by in PIVOT_KEYS else None, arg=arg.strip())
    at = _kept(rows, view)
    if by == "name":
        values = np.asarray(rows.names, dtype=object)[rows.name] if rows.names else np.asarray([], object)
    elif by == "kind":
        values = np.asarray([KIND_NAMES.get(int(k), "unknown") for k in rows.kind], dtype=object)
    elif by == "rank":
        values = rows.rank.astype(str)
    else:
        assert rows.key is not None
        values = rows.key
    # one code per value and run and rank: a row inside another of its own group counts once in the total
    every = np.unique(values.astype(str), return_inverse=True)[1].reshape(-1)
    within = ~_inside_same_key(rows.parent, (every * (int(rows.run.max(initial=0)) + 1) + rows.run)
                               * (int(rows.rank.max(initial=0)) + 1) + rows.rank)
    uniq, group = np.unique(values[at].astype(str), return_inverse=True)
    n = len(uniq)
    total, own, longest, summed = (np.zeros(n, np.int64) for _ in range(4))
    np.add.at(total, group, np.where(within[at], rows.clipped_ns[at], 0))
    np.add.at(summed, group, rows.clipped_ns[at])
    np.add.at(own, group, rows.self_ns[at])
    np.maximum.at(longest, group, rows.clipped_ns[at])
    count = np.bincount(group, minlength=n)
    order = np.lexsort((np.arange(n), -own, -total))[:PIVOT_LIMIT]
    return {"by": by, "arg": arg if by == "arg" else "", "view": view, "groups": int(n), "rows": [
        {"key": str(uniq[g]), "count": int(count[g]), "self_ns": int(own[g]), "total_ns": int(total[g]),
         "mean_ns": int(summed[g] // count[g]), "max_ns": int(longest[g])} for g in order.tolist()]}


def flame(rows: AreaRows) -> dict[str, Any]:
    """The chosen rows merged by name path (through their nearest chosen ancestors): per node its
    parent node, name, depth, count, total (time inside the area) and self (total minus its
    children's). Node 0 is the root, the whole selection."""
    keep = rows.chosen & (rows.clipped_ns > 0)
    up = ops.nearest(rows.parent, keep)
    depth = _depths(up, keep)
    names, name_code = np.unique(rows.name, return_inverse=True)  # codes of the names present
    node = np.full(len(up), -1, np.int64)
    parents, node_names, node_depth = [-1], [-1], [0]
    for level in range(int(depth.max(initial=-1)) + 1):
        at = np.flatnonzero(keep & (depth == level))
        above = np.where(up[at] >= 0, node[np.maximum(up[at], 0)], 0)
        key = above * (len(names) + 1) + name_code[at]
        uniq, inverse = np.unique(key, return_inverse=True)
        node[at] = len(parents) + inverse
        parents.extend((uniq // (len(names) + 1)).tolist())
        node_names.extend((uniq % (len(names) + 1)).tolist())
        node_depth.extend([level + 1] * len(uniq))
    parent = np.asarray(parents, np.int64)
    count_n = np.bincount(node[keep], minlength=len(parent))
    total = np.zeros(len(parent), np.int64)
    np.add.at(total, node[keep], rows.clipped_ns[keep])
    total[0] = int(rows.clipped_ns[keep & (up < 0)].sum())
    child_sum = np.zeros(len(parent), np.int64)
    np.add.at(child_sum, parent[1:], total[1:])
    kept = _prune(parent, np.asarray(node_depth), total)
    renumber = np.cumsum(kept) - 1
    return {"nodes": {
        "parent": [-1, *renumber[parent[kept][1:]].tolist()],
        "name": ["(selection)", *(rows.names[names[c]] for c in np.asarray(node_names)[kept][1:])],
        "depth": np.asarray(node_depth)[kept].tolist(),
        "count": count_n[kept].tolist(),
        "total_ns": total[kept].tolist(),
        "self_ns": np.maximum(total - child_sum, 0)[kept].tolist(),
    }, "pruned": int((~kept).sum())}


def _depths(up: np.ndarray, keep: np.ndarray) -> np.ndarray:
    """How many kept ancestors each row has (-1 for rows not kept)."""
    depth = np.where(keep, 0, -1)
    hop = up.copy()
    while (live := np.flatnonzero(keep & (hop >= 0))).size:
        depth[live] += 1
        hop[live] = up[hop[live]]
    return depth


def _prune(parent: np.ndarray, depth: np.ndarray, total: np.ndarray) -> np.ndarray:
    """Which nodes to send: all, or the FLAME_NODE_LIMIT largest (a node is never larger than its
    parent, so what is kept stays a tree)."""
    kept = np.ones(len(parent), bool)
    if len(parent) > FLAME_NODE_LIMIT:
        floor = np.sort(total)[::-1][FLAME_NODE_LIMIT - 1]
        kept = total > floor
        kept[0] = True
        for level in range(1, int(depth.max()) + 1):  # a node whose parent goes, goes too
            at = np.flatnonzero(depth == level)
            kept[at] &= kept[parent[at]]
    return kept


def area_summary(index: ViewerIndex, start_ns: int, end_ns: int, tracks: list[int], view: str) -> dict[str, Any]:
    """The aggregation and the flamegraph of one area, from one read of its rows."""
    rows = load(index, start_ns, end_ns, tracks)
    return {"start": start_ns, "end": end_ns, "tracks": tracks, "aggregate": aggregate(rows, view),
            "flame": flame(rows)}

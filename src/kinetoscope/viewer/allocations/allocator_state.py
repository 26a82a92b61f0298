"""The allocator segment view: segments and their blocks at a snapshot, or at an earlier time rebuilt
from the snapshot's trace (``allocator_replay``), with the fragmentation figures of each segment.

Times are offsets from the run start, as on the other memory pages.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from kinetoscope.viewer.allocations import allocator_replay as ar
from kinetoscope.viewer.allocations.memory import MAX_POINTS
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying.queries import js_safe

# action -> (row, sign) of its size in the series: row 0 reserved bytes, row 1 active (requested) bytes
SIZE_DELTA = {"segment_alloc": (0, 1), "segment_free": (0, -1), "segment_map": (0, 1), "segment_unmap": (0, -1),
              "alloc": (1, 1), "free_completed": (1, -1)}


# Snapshots with segments or trace entries (a host snapshot taken when nothing was live has no
# segments, yet its trace rebuilds every earlier state).
SNAPSHOTS = """
    SELECT run, rank, session, snapshot, device, count(DISTINCT segment_addr) AS segments,
           coalesce(sum(block_size_bytes), 0) AS reserved FROM segments GROUP BY ALL
    UNION ALL
    SELECT DISTINCT run, rank, session, snapshot, device, 0, 0 FROM allocator_trace"""


def segment_sources(index: ViewerIndex) -> list[dict[str, Any]]:
    """Every (run, rank, session, snapshot, device) with segments or trace entries, with its reserved bytes."""
    rows = index.cursor().execute(f"""
        SELECT run, rank, session, snapshot, device, max(segments), max(reserved) FROM ({SNAPSHOTS})
        GROUP BY ALL ORDER BY run, rank, session, snapshot, device""").fetchall()
    return [{"run": r, "rank": k, "session": s, "snapshot": n, "device": d, "segments": c, "reserved_bytes": int(b)}
            for r, k, s, n, d, c, b in rows]


def _pick(index: ViewerIndex, source: list[Any], snapshot: str, session: str) -> tuple[str, str] | None:
    """The (session, snapshot) asked for, else the last one of the (run, rank, device) ``source``."""
    found = index.cursor().execute(f"""
        SELECT session, snapshot FROM ({SNAPSHOTS})
        WHERE run = ? AND rank = ? AND device = ? AND (? = '' OR snapshot = ?) AND (? = '' OR session = ?)
        GROUP BY ALL ORDER BY session DESC, snapshot DESC LIMIT 1""",
        [*source, snapshot, snapshot, session, session]).fetchone()
    return (str(found[0]), str(found[1])) if found else None


def _snapshot_state(index: ViewerIndex, where: list[Any]) -> ar.State:
    rows = index.cursor().execute("""
        SELECT segment_addr, segment_size_bytes, stream, pool, segment_type, is_expandable,
               block_addr, block_size_bytes, requested_size_bytes, state, frames
        FROM segments WHERE run = ? AND rank = ? AND device = ? AND session = ? AND snapshot = ?
        ORDER BY segment_addr, block_addr""", where).fetchall()
    segments: dict[int, ar.Segment] = {}
    blocks: dict[int, ar.Block] = {}
    for addr, size, stream, pool, kind, expandable, b_addr, b_size, requested, state, frames in rows:
        segments.setdefault(addr, ar.Segment(addr, size, stream, pool, kind, bool(expandable)))
        if state in (ar.ALLOCATED, ar.PENDING_FREE):
            blocks[b_addr] = ar.Block(b_addr, b_size, requested, state, frames=frames)
    return ar.State(list(segments.values()), blocks)


def _trace(index: ViewerIndex, where: list[Any]) -> dict[str, np.ndarray]:
    found = index.cursor().execute("""
        SELECT seq, action::VARCHAR AS action, ts_ns, addr, size_bytes, stream, stack_id FROM allocator_trace
        WHERE run = ? AND rank = ? AND device = ? AND session = ? AND snapshot = ? ORDER BY seq""", where).fetchnumpy()
    return {k: np.asarray(v) for k, v in found.items()}


def _entries_after(trace: dict[str, np.ndarray], at_abs: int) -> list[ar.Entry]:
    """The entries after ``at_abs``, newest first; a free carries its allocation's stack and time."""
    alloc_of: dict[int, tuple[int, int]] = {}
    entries: list[ar.Entry] = []
    columns = (trace["action"], trace["ts_ns"], trace["addr"], trace["size_bytes"], trace["stream"], trace["stack_id"])
    for action, ts, addr, size, stream, stack in zip(*columns, strict=True):
        if action == "alloc":
            alloc_of[int(addr)] = (int(stack), int(ts))
        if ts > at_abs:
            made = alloc_of.get(int(addr), (-1, -1)) if action.startswith("free") else (-1, -1)
            entries.append(ar.Entry(str(action), int(addr), int(size), int(stream), int(stack), *made))
    entries.reverse()
    return entries


def _series(trace: dict[str, np.ndarray], final: tuple[int, int], t0: int) -> dict[str, list[int]]:
    """Reserved and active (requested) bytes after each timed entry, thinned keeping each stride's peak:
    summed forward from the state before the trace (the snapshot's totals less every entry's change)."""
    actions, ts = trace["action"], trace["ts_ns"]
    delta = np.zeros((2, len(actions)), dtype=np.int64)
    for action, (row, sign) in SIZE_DELTA.items():
        hit = actions == action
        delta[row, hit] = sign * trace["size_bytes"][hit]
    start = np.array(final, dtype=np.int64) - delta.sum(axis=1)
    totals = start[:, None] + np.cumsum(delta, axis=1)
    keep = ts >= 0
    ts, totals = ts[keep], totals[:, keep]
    stride = max(1, len(ts) // MAX_POINTS + 1)
    picks = [i + int(np.argmax(totals[1, i:i + stride])) for i in range(0, len(ts), stride)]
    if picks and picks[-1] != len(ts) - 1:
        picks.append(len(ts) - 1)  # the series ends at the snapshot's totals
    return {"ts": [int(ts[i]) - t0 for i in picks], "reserved": [int(totals[0, i]) for i in picks],
            "active": [int(totals[1, i]) for i in picks]}


def _history(trace: dict[str, np.ndarray], at_abs: int | None, t0: int) -> dict[str, Any]:
    timed = trace["ts_ns"][trace["ts_ns"] >= 0]
    first = int(timed.min()) if len(timed) else None
    last = int(timed.max()) if len(timed) else None
    untimed = len(trace["ts_ns"]) - len(timed)
    note, complete = "", True
    if at_abs is not None and untimed:
        note, complete = (f"{untimed:,} trace entries carry no time (an older snapshot format): only the state "
                          "at the snapshot can be shown"), False
    elif at_abs is not None and (first is None or at_abs < first):
        begins = "the trace has no entries" if first is None else f"the trace begins {first - t0:,} ns into the run"
        note, complete = (f"History is incomplete: {begins}; what happened before was not recorded (memory "
                          "history was off, or its max_entries dropped it). Shown: the state just before the "
                          "first entry."), False
    return {"first_ns": None if first is None else first - t0, "last_ns": None if last is None else last - t0,
            "entries": len(trace["ts_ns"]), "complete": complete, "note": note}


def _steps(trace: dict[str, np.ndarray], at_abs: int | None, t0: int) -> dict[str, Any]:
    """The last entry in force at ``at_abs`` (None: the snapshot's last) and the times one entry time
    before and after it (entries sharing a µs step together)."""
    ts = trace["ts_ns"]
    timed = np.flatnonzero(ts >= 0)
    if not len(timed):
        return {"last_entry": None, "prev_ns": None, "next_ns": None}
    done = timed if at_abs is None else timed[ts[timed] <= at_abs]
    last = int(done[-1]) if len(done) else None
    now = ts[last] if last is not None else None
    before = ts[timed][ts[timed] < now] if now is not None else ts[timed][:0]
    after = ts[timed][ts[timed] > (now if now is not None else at_abs if at_abs is not None else 0)]
    entry = None if last is None else {
        "seq": int(trace["seq"][last]), "action": str(trace["action"][last]), "addr": js_safe(int(trace["addr"][last])),
        "size": int(trace["size_bytes"][last]), "stream": int(trace["stream"][last]), "ts_ns": int(ts[last]) - t0}
    return {"last_entry": entry, "prev_ns": int(before.max()) - t0 if len(before) else None,
            "next_ns": int(after.min()) - t0 if len(after) else None}


def allocator_state(index: ViewerIndex, run: str, rank: int, device: int, *, at_ns: int | None = None,
                    snapshot: str = "", session: str = "") -> dict[str, Any]:
    """Segments and blocks of one snapshot at ``at_ns`` (an offset from the run start; None: at the
    snapshot), each segment with its allocated, pending-free and free bytes and its largest free block."""
    picked = _pick(index, [run, rank, device], snapshot, session)
    if picked is None:
        return {"run": run, "rank": rank, "device": device, "segments": [], "found": False,
                "note": "no allocator segments for this rank and device (no memory snapshot was ingested)"}
    where = [run, rank, device, *picked]
    t0 = index.t0_ns
    state, trace = _snapshot_state(index, where), _trace(index, where)
    history = _history(trace, None if at_ns is None else at_ns + t0, t0)
    final = (sum(s.size for s in state.segments), sum(b.requested for b in state.blocks.values()))
    undo = [] if at_ns is None or _untimed(trace) else _entries_after(trace, at_ns + t0)
    rebuilt = ar.replay(state, undo)
    segments, unplaced = ar.place(rebuilt, one_segment_per_block=device < 0)
    made_by = _segment_stacks(trace, None if at_ns is None else at_ns + t0)
    stacks = _stack_texts(index, run, rank, [b.stack_id for s in segments for b in s.blocks if not b.frames]
                          + [made_by.get(s.addr, -1) for s in segments])
    return {"run": run, "rank": rank, "device": device, "session": picked[0], "snapshot": picked[1], "found": True,
            "at_ns": at_ns, "history": history, "undone": rebuilt.undone, "mismatches": rebuilt.mismatches,
            "unplaced": unplaced, "totals": _totals(segments), "series": _series(trace, final, t0),
            **_steps(trace, None if at_ns is None else at_ns + t0, t0),
            "stacks": stacks.texts, "segments": [_segment_json(s, stacks, made_by) for s in segments]}


def _untimed(trace: dict[str, np.ndarray]) -> bool:
    return bool((trace["ts_ns"] < 0).any())


class _Stacks:
    """Stack texts by index, shared by the blocks that have the same stack."""

    def __init__(self, by_id: dict[int, str]) -> None:
        self.by_id = by_id
        self.texts: list[str] = []
        self.index: dict[str, int] = {}

    def of(self, block: ar.Block) -> int:
        return self._of_text(block.frames or self.by_id.get(block.stack_id, ""))

    def of_id(self, stack_id: int) -> int:
        return self._of_text(self.by_id.get(stack_id, ""))

    def _of_text(self, text: str) -> int:
        if not text:
            return -1
        if text not in self.index:
            self.index[text] = len(self.texts)
            self.texts.append(text)
        return self.index[text]


def _segment_stacks(trace: dict[str, np.ndarray], at_abs: int | None) -> dict[int, int]:
    """Segment address -> stack of the ``segment_alloc`` that made it (the last one by ``at_abs``)."""
    made = (trace["action"] == "segment_alloc") & (trace["stack_id"] >= 0)
    if at_abs is not None:
        made &= trace["ts_ns"] <= at_abs
    return {int(a): int(sid) for a, sid in zip(trace["addr"][made], trace["stack_id"][made], strict=True)}


def _stack_texts(index: ViewerIndex, run: str, rank: int, stack_ids: list[int]) -> _Stacks:
    """Stack text (``name file:line`` per line, innermost first) of the given stack ids."""
    ids = sorted({i for i in stack_ids if i >= 0})
    if not ids:
        return _Stacks({})
    rows = index.cursor().execute("""
        WITH RECURSIVE s(root, cur, hop, text) AS (
          SELECT unnest(?::BIGINT[]), unnest(?::BIGINT[]), 0, ''
          UNION ALL
          SELECT s.root, f.parent_id, s.hop + 1, s.text || chr(10) || f.name || ' ' || f.file || ':' || f.line
          FROM s JOIN frames f ON f.stack_id = s.cur AND f.run = ? AND f.rank = ? WHERE s.hop < 64)
        SELECT root, arg_max(text, hop) FROM s GROUP BY root""", [ids, ids, run, rank]).fetchall()
    return _Stacks({int(root): str(text).lstrip("\n") for root, text in rows})


def _segment_json(seg: ar.Segment, stacks: _Stacks, made_by: dict[int, int]) -> dict[str, Any]:
    figures = _figures([seg])
    return {"addr": js_safe(seg.addr), "size": seg.size, "stream": seg.stream, "pool": seg.pool, "type": seg.kind,
            "expandable": seg.expandable, **figures, "stack": stacks.of_id(made_by.get(seg.addr, -1)),
            "blocks": [{"addr": js_safe(b.addr), "offset": b.addr - seg.addr, "size": b.size, "requested": b.requested,
                        "state": b.state, "stack": stacks.of(b), "size_exact": b.size_exact} for b in seg.blocks]}


def _figures(segments: list[ar.Segment]) -> dict[str, int]:
    blocks = [b for s in segments for b in s.blocks]
    free = [b.size for b in blocks if b.state == ar.INACTIVE]
    return {"allocated_bytes": sum(b.size for b in blocks if b.state == ar.ALLOCATED),
            "requested_bytes": sum(b.requested for b in blocks if b.state != ar.INACTIVE),
            "pending_free_bytes": sum(b.size for b in blocks if b.state == ar.PENDING_FREE),
            "free_bytes": sum(free), "free_blocks": len(free), "largest_free_bytes": max(free, default=0)}


def _totals(segments: list[ar.Segment]) -> dict[str, int]:
    return {"reserved_bytes": sum(s.size for s in segments), "segments": len(segments), **_figures(segments)}

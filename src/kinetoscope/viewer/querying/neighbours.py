"""The next or previous slice on an event's track and lane (the `.` and `,` keys).

Looked up in windows that double from 1 ms, so each query reads only the rows its time range's zone
maps let through, however long the trace.
"""

from __future__ import annotations

from typing import Any

from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying.queries import event_brief

FIRST_WINDOW_NS = 1_000_000


def neighbour(index: ViewerIndex, event_id: int, forward: bool) -> dict[str, Any] | None:
    """The slice after (or before) `event_id` on its track and lane, by start time then id; None at either end."""
    brief = event_brief(index, [event_id]).get(event_id)
    if brief is None:
        return None
    ts, track, lane = int(brief["ts"]), int(brief["track"]), int(brief["lane"])
    con = index.cursor()
    window = FIRST_WINDOW_NS
    while True:
        lo, hi = (ts, ts + window) if forward else (ts - window, ts + 1)
        after = "(ts > ? OR (ts = ? AND id > ?))" if forward else "(ts < ? OR (ts = ? AND id < ?))"
        found = con.execute(
            f"SELECT id FROM ev WHERE track = ? AND lane = ? AND ts >= ? AND ts < ? AND {after}"
            f" ORDER BY ts {'ASC' if forward else 'DESC'}, id {'ASC' if forward else 'DESC'} LIMIT 1",
            [track, lane, lo, hi, ts, ts, event_id]).fetchone()
        if found is not None:
            return event_brief(index, [int(found[0])]).get(int(found[0]))
        if (forward and hi > index.span_ns) or (not forward and lo < 0):
            return None
        window *= 2

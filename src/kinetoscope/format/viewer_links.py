"""The viewer's deep links: the URL query that opens its timeline at a time range with an event
selected, as ``web/src/lib/link.ts`` reads it. Spelled here once, below every layer that writes
one (findings' links, ``kinetoscope view --at/--event``); times are ns from the dataset's first event."""

from __future__ import annotations


def timeline_query(at: tuple[int, int] | None, event: int | None) -> str:
    """The query (without ``?``) that opens the timeline at ``at`` (start, end) with ``event``
    selected; ``""`` for neither."""
    if at is None and event is None:
        return ""
    parts = ["page=timeline"]
    if at is not None:
        parts += [f"start={at[0]}", f"end={at[1]}"]
    if event is not None:
        parts.append(f"sel={event}")
    return "&".join(parts)

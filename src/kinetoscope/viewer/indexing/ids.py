"""Ids on the wire: every event id the API sends, and every other 64-bit id (the dataset's track ids,
Kineto's correlation and External ids), is a decimal string.

Event ids are ``rank << 40 | session slot << 32 | index`` (``dataset/schema``): from rank 8192 on they
pass 2^53, beyond which a browser's numbers (float64) cannot hold every integer. The page keeps ids
as opaque strings and sends them back as they came, in paths of decimal digits. The queries keep
ids as integers; each function here turns one endpoint's answer into what is sent. The timeline's
own track ids (``view_tracks``, numbered from 0) and counter ids stay numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

# Keys whose value is an event id, wherever they stand: an event's fields, an analysis's rows.
EVENT_ID_KEYS = frozenset({"id", "parent_id", "op_id", "launch_id", "event_id", "example_id", "graph_launch_id",
                           "capture_op_id", "capture_launch_id"})
# An event's fields that hold other 64-bit ids.
WIDE_ID_KEYS = frozenset({"track_id", "correlation", "external_id"})


def id_text(value: Any) -> Any:
    """An integer id as its decimal string; anything else (None, an id already a string) as it is."""
    if isinstance(value, int | np.integer) and not isinstance(value, bool):
        return str(int(value))
    return value


def brief(found: dict[str, Any] | None) -> dict[str, Any] | None:
    """An event's brief (``queries.event_brief``) with its id as text."""
    return None if found is None else {**found, "id": id_text(found["id"])}


def window(found: dict[str, Any]) -> dict[str, Any]:
    """``/api/window``: the slices' ids as text."""
    slices = found["slices"]
    return {**found, "slices": {**slices, "id": [str(i) for i in np.asarray(slices["id"], np.int64).tolist()]}}


def details(found: dict[str, Any] | None) -> dict[str, Any] | None:
    """``/api/event/{id}``: the brief and the fields that hold ids."""
    if found is None:
        return None
    fields = {k: id_text(v) if k in EVENT_ID_KEYS | WIDE_ID_KEYS else v for k, v in found["fields"].items()}
    return {**found, "id": id_text(found["id"]), "fields": fields}


def chain(found: dict[str, Any]) -> dict[str, Any]:
    """``/api/flows/{id}``: the event, those up and down its flows, and the edges between them."""
    return {**found, "event": brief(found["event"]),
            "upstream": [brief(b) for b in found["upstream"]], "downstream": [brief(b) for b in found["downstream"]],
            "edges": [{**e, "src": id_text(e["src"]), "dst": id_text(e["dst"])} for e in found["edges"]]}


def search_result(found: dict[str, Any]) -> dict[str, Any]:
    """``/api/search``: each hit's id as text."""
    return {**found, "hits": [brief(h) for h in found["hits"]]}


def matches(found: dict[str, Any]) -> dict[str, Any]:
    """``/api/matches``: the matching ids as text."""
    return {**found, "ids": [id_text(i) for i in found["ids"]]}


def compare_events(found: dict[str, Any]) -> dict[str, Any]:
    """``/api/compare/events``: each side's brief with its id as text."""
    return {**found, "base": brief(found["base"]), "new": brief(found["new"])}


def collective(found: dict[str, Any]) -> dict[str, Any]:
    """``/api/collective/{id}``: the event asked about and each rank's event of the instance."""
    return {**found, "event_id": id_text(found["event_id"]),
            "ranks": [{**r, "id": id_text(r["id"])} for r in found["ranks"]]}


def allocations(found: dict[str, Any]) -> dict[str, Any]:
    """``/api/memory/allocations`` and ``/api/memory/largest``: each allocation's event as text."""
    return {**found, "allocations": [{**a, "event_id": id_text(a["event_id"])} for a in found["allocations"]]}


def findings(found: dict[str, Any]) -> dict[str, Any]:
    """``/api/findings``: each evidence's event as text, in the findings and in their groups."""
    def evidenced(item: dict[str, Any]) -> dict[str, Any]:
        return {**item, "evidence": [{**e, "event_id": id_text(e["event_id"])} for e in item["evidence"]]}

    keys = [key for key in ("findings", "groups") if key in found]
    lists: dict[str, Any] = {key: [evidenced(item) for item in found[key]] for key in keys}
    return {**found, **lists}


def summary(found: dict[str, Any]) -> dict[str, Any]:
    """``/api/summary``: the columns of the analyses' rows that hold event ids, as text."""
    return {**found, "analyses": [{**a, "rows": [{k: id_text(v) if k in EVENT_ID_KEYS else v for k, v in row.items()}
                                                 for row in a["rows"]]} for a in found["analyses"]]}

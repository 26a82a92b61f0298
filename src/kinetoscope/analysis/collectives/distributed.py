"""The analyses across the ranks of a distributed run that read matched collectives: each
instance's latency, bandwidth and late rank, each rank's row of the costliest instances, and
each rank's time waiting for the others.
Both take each host's clock offset (``clock_alignment``) off the arrival times first."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables.column_arrays import ints
from kinetoscope.analysis._tables.rank_slices import Tables
from kinetoscope.analysis._tables.result_tables import rows
from kinetoscope.analysis.collectives.clock_alignment import offsets_applied
from kinetoscope.analysis.collectives.matched_collectives import (
    INSTANCE_SCHEMA,
    WAIT_SCHEMA,
    Matched,
    arrivals,
    instances,
    matched,
    rank_waits,
    wall_ns,
)
from kinetoscope.analysis.settings.options import TopOptions


def _matched(tables: Tables) -> Matched:
    found = arrivals(tables["events"])
    return matched(found, offsets_applied(tables, found))


def matched_collectives(tables: Tables, options: TopOptions) -> pa.Table:
    """Collective instances matched across ranks (by process group and ``Seq``, else by order),
    most waiting first: latency (shortest duration over ranks), message size, algorithm and bus
    bandwidth (nccl-tests' formulas), the rank that arrived last and how late, and the time all
    ranks waited in it."""
    found = sorted(instances(_matched(tables)), key=lambda r: (-int(str(r["wait_ns"])), int(str(r["start_ts_ns"]))))
    return rows(INSTANCE_SCHEMA, found[: options.top])


def collective_waits(tables: Tables) -> pa.Table:
    """Per rank: time in matched collectives, the part spent waiting for other ranks (its duration
    minus the instance's shortest) and its share of the rank's wall time, how often it arrived
    last, and the instance it waited longest in."""
    return rows(WAIT_SCHEMA, rank_waits(_matched(tables), wall_ns(tables["events"])))


ARRIVAL_COLUMNS = [
    ("run", pa.string()),
    ("collective", pa.string()),
    ("number", pa.int64()),
    ("group", pa.string()),
    ("rank", pa.int32()),
    ("event_id", pa.int64()),
    ("start_ts_ns", pa.int64()),
    ("dur_ns", pa.int64()),
    ("skew_ns", pa.int64()),
    ("wait_ns", pa.int64()),
    ("last", pa.bool_()),
]


def collective_arrivals(tables: Tables, options: TopOptions) -> pa.Table:
    """Each rank's row of the ``top`` collective instances that cost most waiting (those of
    ``matched_collectives``): its kernel (or host collective) event, start on the reference clock,
    duration, arrival skew (start minus the instance's earliest), wait, and whether it came last."""
    m = _matched(tables)
    t = m.table
    instance = ints(t, "instance")
    if not len(instance):
        return rows(ARRIVAL_COLUMNS, [])
    waited = np.bincount(instance, weights=m.wait_ns.astype(np.float64))
    first = np.full(len(waited), np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first, instance, m.first_start_ns)
    present = np.unique(instance)
    ranked = present[np.lexsort((first[present], -waited[present]))]
    chosen = ranked[: options.top]
    place = np.full(len(waited), len(waited), dtype=np.int64)
    place[chosen] = np.arange(len(chosen))
    keep = np.flatnonzero(place[instance] < len(chosen))
    keep = keep[np.lexsort((ints(t, "rank")[keep], place[instance[keep]]))]
    last = np.zeros(len(t), dtype=bool)
    last[m.last_rows()] = True
    picked = t.take(pa.array(keep, pa.int64()))
    return pa.table(
        {
            "run": picked.column("run"),
            "collective": picked.column("collective"),
            "number": picked.column("number"),
            "group": picked.column("group"),
            "rank": picked.column("rank"),
            "event_id": picked.column("event_id"),
            "start_ts_ns": pa.array(m.start_ns[keep], pa.int64()),
            "dur_ns": picked.column("dur_ns"),
            "skew_ns": pa.array(m.skew_ns[keep], pa.int64()),
            "wait_ns": pa.array(m.wait_ns[keep], pa.int64()),
            "last": pa.array(last[keep], pa.bool_()),
        },
        schema=pa.schema(ARRIVAL_COLUMNS),
    )

"""The analyses across the ranks of a distributed run that read matched collectives: each
instance's latency, bandwidth and late rank, and each rank's time waiting for the others.
Both take each host's clock offset (``clock_alignment``) off the arrival times first."""

from __future__ import annotations

import pyarrow as pa

from kinetoscope.analysis.clock_alignment import offsets_applied
from kinetoscope.analysis.frames import Tables, rows
from kinetoscope.analysis.matched_collectives import (
    INSTANCE_SCHEMA,
    WAIT_SCHEMA,
    arrivals,
    instances,
    matched,
    rank_waits,
    wall_ns,
)
from kinetoscope.analysis.options import TopOptions


def matched_collectives(tables: Tables, options: TopOptions) -> pa.Table:
    """Collective instances matched across ranks (by process group and ``Seq``, else by order),
    most waiting first: latency (shortest duration over ranks), message size, algorithm and bus
    bandwidth (nccl-tests' formulas), the rank that arrived last and how late, and the time all
    ranks waited in it."""
    found_rows = arrivals(tables["events"])
    m = matched(found_rows, offsets_applied(tables, found_rows))
    found = sorted(instances(m), key=lambda r: (-int(str(r["wait_ns"])), int(str(r["start_ts_ns"]))))
    return rows(INSTANCE_SCHEMA, found[: options.top] if options.top else found)


def collective_waits(tables: Tables) -> pa.Table:
    """Per rank: time in matched collectives, the part spent waiting for other ranks (its duration
    minus the instance's shortest) and its share of the rank's wall time, how often it arrived
    last, and the instance it waited longest in."""
    events = tables["events"]
    found_rows = arrivals(events)
    m = matched(found_rows, offsets_applied(tables, found_rows))
    return rows(WAIT_SCHEMA, rank_waits(m, wall_ns(events)))

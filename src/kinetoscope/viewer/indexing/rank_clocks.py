"""Each rank's own clock offset, for the viewer's "align clocks" toggle.

``clock_offsets`` (the analysis) gives one offset per host: ranks on one host share its clock, so
ranks whose host is the reference's, or is not recorded, are never shifted. The viewer aligns each
rank on its own measurement instead: every rank is taken as its own clock and its offset is the
median, over the collective instances it shares with the run's lowest rank, of its end minus that
rank's end; the uncertainty is the largest deviation of one such difference from the median. On
ranks that truly share a clock this is the ranks' real spread in leaving a collective (µs); on a
rank whose clock is off (another host, or a trace shifted by hand) it is that clock's offset.
"""

from __future__ import annotations

from typing import Any

import duckdb

from kinetoscope.analysis.collectives import user_communication
from kinetoscope.analysis.collectives.clock_alignment import estimate
from kinetoscope.analysis.collectives.matched_collectives import arrivals, matched
from kinetoscope.query.collective_rows import collective_tables
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex


def rank_clocks(index: ViewerIndex) -> dict[str, Any]:
    """``rank_clocks``: per rank with matched collectives, ``offset_ns`` (its clock minus the run's
    lowest rank's: the viewer subtracts it), ``uncertainty_ns`` and ``samples``; where the dataset
    cannot give them, none and ``rank_clocks_error`` saying why."""
    try:
        with Dataset(index.dataset.path) as dataset:
            events = collective_tables(dataset, None, user_communication.patterns())["events"]
    except (duckdb.Error, KeyError) as exc:
        return {"rank_clocks": [], "rank_clocks_error": f"cannot read the collective rows: {exc}"}
    found = matched(arrivals(events))
    ranks = {(str(run), int(rank)) for run, rank in zip(found.table.column("run").to_pylist(),
                                                        found.table.column("rank").to_pylist(), strict=True)}
    own_clock = {key: f"{key[0]}:{key[1]}" for key in ranks}  # every rank its own "host"
    rows = [{"run": r["run"], "rank": r["rank"], "offset_ns": r["offset_ns"] if r["clock"] != "reference" else 0,
             "uncertainty_ns": r["uncertainty_ns"], "samples": r["samples"]} for r in estimate(found, own_clock)]
    return {"rank_clocks": rows}

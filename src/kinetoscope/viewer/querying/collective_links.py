"""One collective instance on every rank: what the viewer highlights when a collective is selected.

Built once per dataset from ``matched_collectives`` (process group, sequence number or order,
collective) over the collective rows alone; each answer is then a lookup. A rank's arrival skew
is its start minus the instance's earliest start, on the reference clock where hosts' offsets
apply (as in the ``matched_collectives`` analysis); its wait is its duration minus the instance's
shortest.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any

import duckdb
import numpy as np

from kinetoscope.analysis.collectives import user_communication
from kinetoscope.analysis.collectives.clock_alignment import offsets_applied
from kinetoscope.analysis.collectives.matched_collectives import Matched, arrivals, matched
from kinetoscope.analysis.tables import ints
from kinetoscope.query.collective_rows import collective_tables
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex


class CollectiveLinks:
    """Lookups of matched collective instances by any of their ranks' event ids."""

    def __init__(self, index: ViewerIndex) -> None:
        self.index = index

    @cached_property
    def _matched(self) -> tuple[Matched | None, str]:
        try:
            with Dataset(self.index.dataset.path) as dataset:
                tables = collective_tables(dataset, None, user_communication.patterns())
        except duckdb.Error as exc:
            return None, f"cannot read the collective rows: {exc}"
        found = arrivals(tables["events"])
        return matched(found, offsets_applied(tables, found)), ""

    @cached_property
    def _by_id(self) -> tuple[np.ndarray, np.ndarray]:
        """Event ids in order, and the matched row of each."""
        m, _ = self._matched
        ids = ints(m.table, "event_id") if m is not None else np.zeros(0, dtype=np.int64)
        order = np.argsort(ids, kind="stable")
        return ids[order], order

    def instance(self, event_id: int) -> dict[str, Any]:
        """The instance `event_id` belongs to, one row per rank (``ranks`` empty, with ``reason``,
        where the event is no matched collective)."""
        m, error = self._matched
        if m is None:
            return {"event_id": event_id, "ranks": [], "reason": error}
        ids, order = self._by_id
        at = int(np.searchsorted(ids, event_id))
        if at >= len(ids) or ids[at] != event_id:
            return {"event_id": event_id, "ranks": [],
                    "reason": "not a collective matched across ranks (a collective kernel or host collective "
                              "seen on two ranks or more)"}
        row = int(order[at])
        t = m.table
        instance = ints(t, "instance")
        rows = np.flatnonzero(instance == instance[row])
        rows = rows[np.lexsort((ints(t, "rank")[rows], t.column("run").to_numpy(zero_copy_only=False)[rows]))]
        skew, wait = m.skew_ns, m.wait_ns
        cols = {name: t.column(name).to_pylist() for name in ("run", "rank", "event_id", "ts_ns", "dur_ns")}
        return {
            "event_id": event_id,
            "collective": str(t.column("collective")[row].as_py()),
            "group": str(t.column("group")[row].as_py() or ""),
            "number": int(ints(t, "number")[row]),
            "matched_by": str(t.column("matched_by")[row].as_py()),
            "latency_ns": int(m.latency_ns[row]),
            "ranks": [{"run": cols["run"][i], "rank": cols["rank"][i], "id": cols["event_id"][i],
                       "ts": cols["ts_ns"][i] - self.index.t0_ns, "dur": cols["dur_ns"][i],
                       "skew_ns": int(skew[i]), "wait_ns": int(wait[i])} for i in rows.tolist()],
        }

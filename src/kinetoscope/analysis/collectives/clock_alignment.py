"""Clock offsets between hosts, estimated from matched collectives.

Ranks on one host share its CLOCK_REALTIME; ranks on different hosts are only as aligned as the
hosts' clocks (NTP: often within a millisecond, sometimes far worse). The kernels (or host
collectives) of one collective instance end at about the same true time: no rank leaves before
the last one's data has arrived. So a host's offset is estimated as the median, over the
instances it shares with the reference host (the host of the run's lowest rank), of its ranks'
end minus the median end of the reference host's ranks in that instance; its uncertainty is the
largest deviation of one such difference from the estimate.

A rank whose host is not recorded is taken to share the reference clock: it is measured (its
``measured_ns``) but not shifted.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables import reuse
from kinetoscope.analysis._tables.column_arrays import codes, ints
from kinetoscope.analysis._tables.rank_slices import Tables
from kinetoscope.analysis._tables.result_tables import rows
from kinetoscope.analysis.collectives.matched_collectives import Matched, arrivals, matched

RankKey = tuple[str, int]

OFFSET_SCHEMA = [
    ("run", pa.string()),
    ("rank", pa.int32()),
    ("host", pa.string()),
    ("clock", pa.string()),
    ("offset_ns", pa.int64()),
    ("uncertainty_ns", pa.int64()),
    ("samples", pa.int32()),
    ("measured_ns", pa.int64()),
    ("applied", pa.bool_()),
]
REFERENCE = "reference"


def hosts(tables: Tables) -> dict[RankKey, str]:
    """(run, rank) -> its host name from ``sessions`` ("" where not recorded)."""
    sessions = tables.get("sessions")
    if sessions is None or not {"run", "rank", "host"} <= set(sessions.column_names):
        return {}
    found: dict[RankKey, str] = {}
    for row in sessions.select(["run", "rank", "host"]).to_pylist():
        key = (str(row["run"]), int(row["rank"]))
        if not found.get(key):
            found[key] = str(row["host"] or "")
    return found


def estimate(m: Matched, host_of: dict[RankKey, str]) -> list[dict[str, object]]:
    """One record per rank of every run: its clock and that clock's offset from the reference."""
    t = m.table
    run_code, runs = codes(t, "run")
    ranks = ints(t, "rank")
    ends = ints(t, "ts_ns") + ints(t, "dur_ns")
    instance = ints(t, "instance")
    out: list[dict[str, object]] = []
    for code, run in sorted(enumerate(runs), key=lambda item: item[1]):
        in_run = run_code == code
        if in_run.any():
            out += _run_offsets(run, ranks[in_run], instance[in_run], ends[in_run], host_of)
    return out


def _run_offsets(
    run: str, ranks: np.ndarray, instance: np.ndarray, ends: np.ndarray, host_of: dict[RankKey, str]
) -> list[dict[str, object]]:
    present = np.unique(ranks).tolist()
    reference_host = host_of.get((run, present[0]), "")
    clock_of = {r: host_of.get((run, r), "") or reference_host for r in present}
    clock_names = sorted(set(clock_of.values()))
    clock_code = np.asarray([clock_names.index(clock_of[r]) for r in present])[np.searchsorted(present, ranks)]
    on_reference = clock_code == clock_names.index(reference_host)
    sample = _end_differences(instance, ends, on_reference)
    clocks = {clock: _offset(sample[clock_code == i]) for i, clock in enumerate(clock_names)}
    records = []
    for rank in present:
        clock = clock_of[rank]
        offset, uncertainty, count = clocks[clock]
        mine = sample[ranks == rank]
        mine = mine[~np.isnan(mine)]
        shifted = clock != reference_host and offset is not None
        records.append(
            {
                "run": run,
                "rank": rank,
                "host": host_of.get((run, rank), ""),
                "clock": REFERENCE if clock == reference_host else clock,
                "offset_ns": 0 if clock == reference_host else offset,
                "uncertainty_ns": uncertainty,
                "samples": count,
                "measured_ns": int(np.median(mine)) if len(mine) else None,
                "applied": shifted,
            }
        )
    return records


def _end_differences(instance: np.ndarray, ends: np.ndarray, on_reference: np.ndarray) -> np.ndarray:
    """Each row's end minus the median end of the reference clock's rows of its instance (NaN
    where the instance has none). The medians of all instances from one sort (the reference rows
    by instance, then end; the middle one, or the mean of the middle two, as ``np.median``)."""
    sample = np.full(len(ends), np.nan)
    reference = np.flatnonzero(on_reference)
    if not len(reference):
        return sample
    relative = (ends - ends.min()).astype(np.float64)  # epoch ns lose their last digits as floats
    order = reference[np.lexsort((relative[reference], instance[reference]))]
    of_row, value = instance[order], relative[order]
    starts = np.flatnonzero(np.r_[True, of_row[1:] != of_row[:-1]])
    counts = np.diff(np.r_[starts, len(order)])
    median = (value[starts + (counts - 1) // 2] + value[starts + counts // 2]) / 2
    present = of_row[starts]
    at = np.minimum(np.searchsorted(present, instance), len(present) - 1)
    known = present[at] == instance
    sample[known] = relative[known] - median[at[known]]
    return sample


def _offset(samples: np.ndarray) -> tuple[int | None, int | None, int]:
    """(median, largest deviation from it, count) of the known samples of one clock."""
    known = samples[~np.isnan(samples)]
    if not len(known):
        return None, None, 0
    middle = float(np.median(known))
    return round(middle), round(float(np.abs(known - middle).max())), len(known)


def clock_rows(tables: Tables, found: pa.Table | None = None) -> list[dict[str, object]]:
    """``estimate`` over the run's tables (``found``: their ``arrivals``, when already read); found
    once per arrivals table and hosts inside ``reuse.reusing()``."""
    found = found if found is not None else arrivals(tables["events"])
    host_of = hosts(tables)
    key = ("clock_rows", *sorted(host_of.items()))
    kept = reuse.cached(found, key, lambda: estimate(matched(found), host_of))
    return [dict(record) for record in kept]


def offsets_applied(tables: Tables, found: pa.Table | None = None) -> dict[RankKey, int]:
    """(run, rank) -> the offset to take off its times, for ranks on a host other than the reference's."""
    return {
        (str(r["run"]), int(str(r["rank"]))): int(str(r["offset_ns"]))
        for r in clock_rows(tables, found)
        if r["applied"]
    }


def clock_offsets(tables: Tables) -> pa.Table:
    """Per rank: its host, the clock it is on, that clock's offset from the reference host's (the
    run's lowest rank's) estimated from matched collective ends, the estimate's uncertainty and the
    end differences (rank x instance) it rests on, the rank's own measured end difference, and whether exports and the
    cross-rank analyses apply the offset (ranks on another host than the reference's)."""
    return rows(OFFSET_SCHEMA, clock_rows(tables))

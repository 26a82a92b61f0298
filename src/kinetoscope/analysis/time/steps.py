"""Steps (``ProfilerStep#N``) per rank and across ranks: how long each took, how far ranks
spread, and which rank holds the others back.

The straggler is the rank the others wait for. In a job whose ranks synchronise through
collectives, the others wait inside their collectives while the straggler arrives last and
waits least, so when collectives are present the straggler is the rank with the least
communication time; without collectives it is the rank with the longest mean step.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables import reuse
from kinetoscope.analysis._tables.column_arrays import ints, strings
from kinetoscope.analysis._tables.masks import is_in, starts_with
from kinetoscope.analysis._tables.rank_slices import RankKey, Tables, per_rank
from kinetoscope.analysis._tables.result_tables import pct, rows
from kinetoscope.analysis._tables.selection import where
from kinetoscope.analysis.device.device_time import communication_overlap
from kinetoscope.model import kinds

STEP_PREFIX = kinds.STEP_PREFIX


def step_rows(events: pa.Table) -> pa.Table:
    """The ``ProfilerStep#N`` rows of ``events`` (framework layer); found once per table inside
    ``reuse.reusing()`` (few rows, asked by the overview, the step times and the stragglers)."""
    return reuse.cached(events, "step_rows", lambda: _step_rows(events))


def _step_rows(events: pa.Table) -> pa.Table:
    return where(events, starts_with(events, "name", STEP_PREFIX) & is_in(events, "layer", ("framework",)))


def step_durations(events: pa.Table) -> dict[int, int]:
    """Step number -> its duration (ns) on one rank (the longest row of that number)."""
    steps = step_rows(events)
    numbers = [int(name[len(STEP_PREFIX) :]) for name in strings(steps, "name")]
    out: dict[int, int] = {}
    for number, duration in zip(numbers, ints(steps, "dur_ns").tolist(), strict=True):
        out[number] = max(out.get(number, 0), duration)
    return out


def step_times(tables: Tables) -> pa.Table:
    """Per step, its duration on the fastest, median and slowest rank, the spread, and the slowest rank."""
    by_step: dict[tuple[str, int], list[tuple[int, int]]] = {}
    for (run, rank), events in per_rank(step_rows(tables["events"])):
        for number, duration in step_durations(events).items():
            by_step.setdefault((run, number), []).append((duration, rank))
    records = []
    for (run, number), found in sorted(by_step.items()):
        durations = np.asarray([d for d, _ in found])
        median = float(np.median(durations))
        records.append(
            {
                "run": run,
                "step": number,
                "ranks": len(found),
                "min_ns": int(durations.min()),
                "median_ns": int(median),
                "max_ns": int(durations.max()),
                "spread_pct": pct(float(durations.max() - durations.min()), median),
                "slowest_rank": max(found)[1],
            }
        )
    schema = [
        ("run", pa.string()),
        ("step", pa.int32()),
        ("ranks", pa.int32()),
        ("min_ns", pa.int64()),
        ("median_ns", pa.int64()),
        ("max_ns", pa.int64()),
        ("spread_pct", pa.float64()),
        ("slowest_rank", pa.int32()),
    ]
    return rows(schema, records)


def step_counts(tables: Tables) -> dict[RankKey, tuple[int, int]]:
    """(run, rank) -> (steps, mean step time in ns) of every rank with a step."""
    found = {}
    for key, events in per_rank(step_rows(tables["events"])):
        durations = list(step_durations(events).values())
        found[key] = (len(durations), int(np.mean(durations)) if durations else 0)
    return found


def stragglers(tables: Tables) -> pa.Table:
    """Per rank: steps, mean step time, communication time, and whether it is the run's straggler."""
    return stragglers_of(tables, communication_overlap(tables))


def stragglers_of_ranks(run_tables: Tables, rows: dict[str, pa.Table]) -> pa.Table:
    """``stragglers`` from the ranks' step rows and ``communication_overlap`` rows (a summary rank by rank)."""
    return stragglers_of(run_tables, rows["communication_overlap"])


def stragglers_of(tables: Tables, overlap: pa.Table) -> pa.Table:
    """``stragglers`` from the step rows of ``tables`` and the ranks' ``communication_overlap`` rows
    (``overlap``), so that a summary made rank by rank needs only those of each rank."""
    picked = overlap.select(["run", "rank", "communication_ns"]).to_pylist()
    comm = {(r["run"], r["rank"]): r["communication_ns"] for r in picked}
    per_run: dict[str, list[dict[str, object]]] = {}
    for (run, rank), (steps, mean_ns) in step_counts(tables).items():
        per_run.setdefault(run, []).append(
            {
                "run": run,
                "rank": rank,
                "steps": steps,
                "mean_step_ns": mean_ns,
                "communication_ns": comm.get((run, rank), 0),
            }
        )
    records = []
    for ranks in per_run.values():
        with_comm = any(int(str(r["communication_ns"])) > 0 for r in ranks)
        key = (lambda r: int(str(r["communication_ns"]))) if with_comm else (lambda r: -int(str(r["mean_step_ns"])))
        slowest = min(ranks, key=key)
        reason = "least communication (waited on least)" if with_comm else "longest mean step"
        for record in ranks:
            record["straggler"] = record is slowest and len(ranks) > 1
            record["reason"] = reason if record["straggler"] else ""  # said once, on the straggler's row
            records.append(record)
    schema = [
        ("run", pa.string()),
        ("rank", pa.int32()),
        ("steps", pa.int32()),
        ("mean_step_ns", pa.int64()),
        ("communication_ns", pa.int64()),
        ("straggler", pa.bool_()),
        ("reason", pa.string()),
    ]
    return rows(schema, records)

"""Rules across the ranks of a run: the straggler the other ranks wait for."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from kinetoscope.analysis.collectives.clock_alignment import offsets_applied
from kinetoscope.analysis.collectives.matched_collectives import Matched, arrivals, instance_name, matched
from kinetoscope.analysis.tables import concatenated, ints, not_empty
from kinetoscope.findings.engine import Observation, run_rule, severity_by_share
from kinetoscope.findings.ranks import RankData
from kinetoscope.model import kinds


def _median_step_ns(data: RankData) -> float:
    durations = data.ints("dur_ns")[data.step_rows]
    return float(np.median(durations)) if len(durations) else 0.0


def _communication_ns(data: RankData) -> int:
    """Time in collectives: the device's collective kernels, or on a host-only rank the host collectives."""
    on_device = data.device_work & not_empty(data.events, "collective")
    return data.covered_ns(on_device if on_device.any() else data.kind(kinds.COLLECTIVE))


Found = tuple[RankData, int, dict[str, object], np.ndarray]  # straggler, loss per step, seen, evidence rows


def _matched(ranks: list[RankData]) -> Matched:
    """The run's collectives matched across its ranks, arrival times on the reference clock."""
    sessions = [data.sessions for data in ranks if data.sessions is not None and data.sessions.num_rows]
    tables = {"events": concatenated([data.events for data in ranks])}  # the whole table when it is theirs
    if sessions:
        tables["sessions"] = pa.concat_tables(sessions, promote_options="default")
    found = arrivals(tables["events"])
    return matched(found, offsets_applied(tables, found))


def _by_arrival(ranks: list[RankData], steps: int) -> Found | None:
    """With collectives matched across ranks, the straggler is the rank whose late arrivals cost the
    others most waiting (then: arrives last most often, waits least): a rank last by microseconds in
    many collectives is not the one a rank last by 30 ms in a few holds up. What it costs the others
    is their wait in the instances it arrived last at."""
    m = _matched(ranks)
    if not m.table.num_rows:
        return None
    rank, instance, wait = ints(m.table, "rank"), ints(m.table, "instance"), m.wait_ns
    last = m.last_rows()
    instance_wait = np.bincount(instance, weights=wait.astype(np.float64))
    caused = {data.rank: float(instance_wait[instance[last][rank[last] == data.rank]].sum()) for data in ranks}
    counts = {data.rank: int((rank[last] == data.rank).sum()) for data in ranks}
    waited = {data.rank: int(wait[rank == data.rank].sum()) for data in ranks}
    straggler = max(ranks, key=lambda data: (caused[data.rank], counts[data.rank], -waited[data.rank], -data.rank))
    held = np.unique(instance[last][rank[last] == straggler.rank])
    in_held = np.isin(instance, held)
    others = [int(wait[in_held & (rank == d.rank)].sum()) for d in ranks if d is not straggler]
    loss_per_step_ns = float(np.median(others)) / steps if others else 0.0
    seen = {"ranks": len(ranks), "steps": steps, "by": "arrival", "instances": len(np.unique(instance)),
            "arrived_last": counts[straggler.rank], "straggler_wait_ns": waited[straggler.rank],
            "others_median_wait_ns": int(np.median([waited[d.rank] for d in ranks if d is not straggler])),
            "wait_per_step_ns": int(loss_per_step_ns), "held_up": _held_up(m, last, straggler.rank)}  # fmt: skip
    evidence = straggler.positions(ints(m.table, "event_id")[last][rank[last] == straggler.rank])
    return straggler, int(loss_per_step_ns), seen, evidence[evidence >= 0]


def _held_up(m: Matched, last: np.ndarray, straggler: int, top: int = 3) -> list[dict[str, object]]:
    """The instances the straggler arrived last at that cost the others most: how late it was."""
    t, instance = m.table, ints(m.table, "instance")
    mine = last[ints(t, "rank")[last] == straggler]
    cost = np.bincount(instance, weights=m.wait_ns.astype(np.float64)).astype(np.int64)[instance[mine]]
    found = []
    for at in np.argsort(-cost, kind="stable")[:top].tolist():
        row = int(mine[at])
        found.append({"collective": instance_name(t, row), "late_ns": int(m.skew_ns[row]),
                      "others_wait_ns": int(cost[at])})  # fmt: skip
    return found


def _by_waiting(ranks: list[RankData], steps: int) -> tuple[RankData, int, dict[str, object]] | None:
    """In a run whose ranks meet in collectives, the straggler waits least: the others' extra
    collective time is what they spend waiting for it."""
    comm = {data.rank: _communication_ns(data) for data in ranks}
    if sum(1 for ns in comm.values() if ns > 0) < 2:
        return None
    straggler = min(ranks, key=lambda data: (comm[data.rank], data.rank))
    waits = [comm[data.rank] - comm[straggler.rank] for data in ranks if data is not straggler]
    wait_per_step_ns = float(np.median(waits)) / steps
    seen = {"ranks": len(ranks), "steps": steps, "straggler_communication_ns": comm[straggler.rank],
            "others_median_communication_ns": int(np.median([comm[d.rank] for d in ranks if d is not straggler])),
            "wait_per_step_ns": int(wait_per_step_ns), "by": "collective time"}  # fmt: skip
    return straggler, int(wait_per_step_ns), seen


def _by_step_time(ranks: list[RankData], steps: int) -> tuple[RankData, int, dict[str, object]]:
    """Without collectives, the straggler is the rank whose median step is longest."""
    medians = {data.rank: _median_step_ns(data) for data in ranks}
    straggler = max(ranks, key=lambda data: (medians[data.rank], -data.rank))
    others = float(np.median([medians[d.rank] for d in ranks if d is not straggler]))
    seen = {"ranks": len(ranks), "steps": steps, "straggler_median_step_ns": int(medians[straggler.rank]),
            "others_median_step_ns": int(others), "by": "step time"}  # fmt: skip
    return straggler, int(medians[straggler.rank] - others), seen


@run_rule(
    "straggler",
    "One rank holds the others back",
    "medium",
    "Find what this rank does that the others do not: uneven data (longer sequences, larger batches on "
    "this rank), extra work on it (logging, evaluation, checkpointing on rank 0), or a slower device or host "
    "(another job on it, thermal throttling). Balance the work, or move the extra work off the step.",
    min_ranks=2,
    min_wait_pct=5,
)
def straggler(ranks: list[RankData], limits: Mapping[str, float]) -> list[tuple[RankData, Observation]]:
    """The rank the others wait for, when they lose ``min_wait_pct``% of a step to it (of the
    window, on ranks without ``ProfilerStep#N``, when their collectives match)."""
    stepped = [data for data in ranks if len(data.step_rows)]
    if len(stepped) >= max(limits["min_ranks"], 2):
        return _straggler_by_step(stepped, limits)
    if len(ranks) >= max(limits["min_ranks"], 2) and not stepped:
        return _straggler_in_window(ranks, limits)
    return []


def _straggler_by_step(stepped: list[RankData], limits: Mapping[str, float]) -> list[tuple[RankData, Observation]]:
    steps = min(data.step_count for data in stepped) or 1
    found = _by_arrival(stepped, steps)
    if found is None:
        slowest, loss_per_step_ns, seen = _by_waiting(stepped, steps) or _by_step_time(stepped, steps)
        found = (slowest, loss_per_step_ns, seen, slowest.step_rows)
    step_ns = float(np.median([_median_step_ns(data) for data in stepped]))
    return _observed(found, step_ns=step_ns, steps=steps, limits=limits, ranks=len(stepped))


def _straggler_in_window(ranks: list[RankData], limits: Mapping[str, float]) -> list[tuple[RankData, Observation]]:
    """Without steps, the whole window stands for one step: arrivals at matched collectives only."""
    found = _by_arrival(ranks, 1)
    if found is None:
        return []
    found[2]["steps"] = 0
    window_ns = float(np.median([data.wall_ns for data in ranks]))
    return _observed(found, step_ns=window_ns, steps=1, limits=limits, ranks=len(ranks))


def _observed(
    found: Found, *, step_ns: float, steps: int, limits: Mapping[str, float], ranks: int
) -> list[tuple[RankData, Observation]]:
    """The finding, when the loss reaches ``min_wait_pct``% of the median step (or window)."""
    slowest, loss_per_step_ns, seen, evidence = found
    seen["loss_pct_of_step"] = round(100.0 * loss_per_step_ns / step_ns, 2) if step_ns else 0.0
    if step_ns <= 0 or loss_per_step_ns < limits["min_wait_pct"] / 100 * step_ns:
        return []
    gain_ns = loss_per_step_ns * steps
    per, median = ("step", "median step") if seen["steps"] else ("window", "window (no ProfilerStep#N)")
    summary = (
        f"rank {slowest.rank} of {ranks}: the others lose {loss_per_step_ns / 1e6:.3f} ms a {per} "
        f"({seen['loss_pct_of_step']}% of the {step_ns / 1e6:.3f} ms {median}) waiting for it (by {seen['by']})"
        + _arrival_summary(seen)
    )
    lost = (
        "their wait in the collectives this rank arrived last at"
        if seen["by"] == "arrival"
        else "the time they lose to this rank"
    )
    basis = (
        f"per step (or window), the median over the other ranks of {lost}, times the steps; "
        "an upper bound (balanced ranks still wait for the slowest of them)"
    )
    severity = severity_by_share(gain_ns, slowest.wall_ns, "medium")
    return [(slowest, Observation(summary, seen, evidence, gain_ns, basis, severity))]


def _arrival_summary(seen: Mapping[str, object]) -> str:
    held = seen.get("held_up")
    if not isinstance(held, list) or not held:
        return ""
    worst = held[0]
    return (
        f"; it arrived last at {seen['arrived_last']} of {seen['instances']} collectives, "
        f"{int(worst['late_ns']) / 1e6:.3f} ms late at {worst['collective']}"
    )

"""Time in gloo collectives spent waiting for the last rank to arrive (CPU runs).

A collective cannot finish before every rank has entered it. Which ``gloo:<op>`` rows of the
ranks are one collective is decided by ``model.matching`` (their order on each rank, within
steps where the ranks' steps line up, aligned across ranks); a rank's wait in it is the time
from its own start to the latest rank's start, at most its duration. Ranks of one host share a
clock; across hosts, clock offsets move these figures (``docs/findings.md``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from kinetoscope.findings.engine import Observation, run_rule, severity_by_share
from kinetoscope.findings.ranks import RankData
from kinetoscope.model import collectives, kinds, matching

NS_PER_MS = 1_000_000
GLOO = "^" + re.escape(kinds.GLOO_PREFIX)


@dataclass(frozen=True)
class Collectives:
    """The gloo collectives of a run's ranks, one entry per collective on one rank."""

    rank_at: np.ndarray  # index into the run's ranks
    row: np.ndarray  # row in that rank's events
    key: np.ndarray  # the collective across ranks: same key, same collective
    ts_ns: np.ndarray
    dur_ns: np.ndarray


def _collectives(ranks: list[RankData]) -> Collectives:
    """Every rank's gloo collectives, each keyed by its instance across ranks (``model.matching``)."""
    rank_at, rows, ts, dur, names = [], [], [], [], []
    steps = []
    for at, data in enumerate(ranks):
        mine = np.flatnonzero(data.kind(kinds.COLLECTIVE) & data.name_matches(GLOO))
        rank_at.append(np.full(len(mine), at, dtype=np.int64))
        rows.append(mine)
        names.append(data.names_at(mine).astype(str))
        steps.append(data.ints("step")[mine])
        ts.append(data.ints("ts_ns")[mine])
        dur.append(data.ints("dur_ns")[mine])
    rank = np.concatenate(rank_at)
    start, length = np.concatenate(ts), np.concatenate(dur)
    spelled = [collectives.canonical(collectives.spelled(str(name))) for name in np.concatenate(names)]
    collective = np.unique(np.asarray(spelled, dtype=object), return_inverse=True)[1].reshape(-1) if spelled else rank
    unknown = np.full(len(rank), -1, dtype=np.int64)
    found = matching.numbers(collective, rank, unknown, unknown, start + length, step=np.concatenate(steps))
    triples = np.stack([collective, found.step, found.number], axis=1)
    key = np.unique(triples, axis=0, return_inverse=True)[1].reshape(-1) if len(rank) else rank
    return Collectives(rank, np.concatenate(rows), key, start, length)


@dataclass(frozen=True)
class Waits:
    """Per entry of ``Collectives``: its wait, whether its collective is on every rank, and the rank
    (index) that entered it last."""

    wait_ns: np.ndarray
    complete: np.ndarray
    last: np.ndarray


def _waits(found: Collectives, ranks: int) -> Waits:
    groups = int(found.key.max(initial=-1)) + 1
    seen_on = np.bincount(found.key, minlength=groups)
    latest = np.full(groups, np.iinfo(np.int64).min)
    np.maximum.at(latest, found.key, found.ts_ns)
    last_rank = np.full(groups, -1)
    is_last = found.ts_ns == latest[found.key]
    last_rank[found.key[is_last]] = found.rank_at[is_last]
    complete = seen_on[found.key] == ranks
    wait = np.clip(latest[found.key] - found.ts_ns, 0, found.dur_ns)
    return Waits(np.where(complete, wait, 0), complete, last_rank[found.key])


@run_rule(
    "gloo_wait",
    "Ranks wait in gloo collectives for the last rank",
    "medium",
    "The time is lost before the collective starts moving data: balance the work between ranks (see the "
    "`straggler` finding and the `stragglers` analysis for the rank that arrives last), and move rank-specific "
    "work (logging, evaluation, checkpoints) out of the step or onto every rank in turn.",
    min_ranks=2,
    min_wait_pct=10,
)
def gloo_wait(ranks: list[RankData], limits: Mapping[str, float]) -> list[tuple[RankData, Observation]]:
    """Per rank, the time its gloo collectives waited for the last rank to enter them."""
    if len(ranks) < max(limits["min_ranks"], 2):
        return []
    found = _collectives(ranks)
    waits = _waits(found, len(ranks))
    out = []
    for at, data in enumerate(ranks):
        mine = found.rank_at == at
        wait_ns = int(waits.wait_ns[mine].sum())
        if not mine.any() or wait_ns < limits["min_wait_pct"] / 100 * data.wall_ns or wait_ns <= 0:
            continue
        out.append((data, _observation(data, ranks, found, waits, mine)))
    return out


def _observation(
    data: RankData,
    ranks: list[RankData],
    found: Collectives,
    waits: Waits,
    mine: np.ndarray,
) -> Observation:
    wait, complete, last = waits.wait_ns, waits.complete, waits.last
    wait_ns, collective_ns = int(wait[mine].sum()), int(found.dur_ns[mine].sum())
    matched = mine & complete
    last_ranks, times = np.unique(last[matched], return_counts=True)
    arrived_last = [{"rank": ranks[int(r)].rank, "collectives": int(c)} for r, c in zip(last_ranks, times, strict=True)]
    arrived_last.sort(key=lambda entry: -int(entry["collectives"]))
    seen: dict[str, Any] = {
        "collectives": int(mine.sum()),
        "matched_on_every_rank": int(matched.sum()),
        "collective_ns": collective_ns,
        "wait_ns": wait_ns,
        "wait_pct_of_collectives": round(100 * wait_ns / max(collective_ns, 1), 2),
        "wait_pct_of_wall": round(100 * wait_ns / max(data.wall_ns, 1), 2),
        "last_to_arrive": arrived_last,
    }
    summary = (
        f"{wait_ns / NS_PER_MS:.2f} ms of {collective_ns / NS_PER_MS:.2f} ms in {seen['collectives']} gloo "
        f"collective(s) waiting for the last rank ({seen['wait_pct_of_wall']}% of the window); "
        f"last to arrive most often: rank {arrived_last[0]['rank']}"
    )
    basis = "the time from this rank's start of each collective to the last rank's start (balanced ranks wait less)"
    rows = found.row[mine & (wait > 0)]
    return Observation(summary, seen, rows, wait_ns, basis, severity_by_share(wait_ns, data.wall_ns))

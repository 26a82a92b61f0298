"""When traces that claim one rank are one rank: only the windows of one process.

A process writes one trace per profiling window, all claiming its rank: those are sessions of
one rank. Two processes that claim the same rank (and world size) are two jobs, or two launches
of one job, never one rank: read together, their events would merge into one timeline spanning
both (two rank-0 traces recorded months apart make a "wall" of millions of seconds). A trace
says who recorded it in its ``distributedInfo`` (rank, world size) and its events' pid; the
host name where the capture recorded one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

Source = TypeVar("Source", bound=Hashable)


@dataclass(frozen=True)
class RankClaim(Generic[Source]):
    """One trace's claim: ``source`` (a path) recorded as ``rank`` of ``world_size`` by process ``pid`` on ``host``."""

    source: Source
    rank: int
    world_size: int
    host: str
    pid: int
    start_ns: int = 0


def _by_rank(claims: Iterable[RankClaim[Source]]) -> list[tuple[tuple[int, int], list[RankClaim[Source]]]]:
    """The claims grouped by (rank, world size), in that order."""
    by_rank: dict[tuple[int, int], list[RankClaim[Source]]] = defaultdict(list)
    for claim in claims:
        by_rank[(claim.rank, claim.world_size)].append(claim)
    return sorted(by_rank.items())


def _writers(found: list[RankClaim[Source]]) -> int:
    return len({(c.host, c.pid) for c in found})


def clashes(claims: Iterable[RankClaim[Source]]) -> dict[tuple[int, int], list[Source]]:
    """(rank, world size) -> its traces, where they come from more than one process: separate runs."""
    return {key: [c.source for c in found] for key, found in _by_rank(claims) if _writers(found) > 1}


def windows(claims: Iterable[RankClaim[Source]]) -> dict[tuple[int, int], list[Source]]:
    """(rank, world size) -> its traces, where one process wrote several (its profiling windows: one rank)."""
    grouped = _by_rank(claims)
    return {key: [c.source for c in found] for key, found in grouped if len(found) > 1 and _writers(found) == 1}


def launches(claims: Iterable[RankClaim[Source]]) -> dict[Source, int]:
    """Which launch (1, 2, ...) each trace belongs to where some rank is claimed by several processes:
    each rank's processes in the order they started, the first of every rank being launch 1. Empty when
    every rank has one process (one run). Traces of one process share its launch."""
    found = list(claims)
    by_rank: dict[tuple[int, int], dict[tuple[str, int], int]] = defaultdict(dict)
    for claim in found:
        processes = by_rank[(claim.rank, claim.world_size)]
        key = (claim.host, claim.pid)
        processes[key] = min(processes.get(key, claim.start_ns), claim.start_ns)
    if all(len(processes) < 2 for processes in by_rank.values()):
        return {}
    order = {
        (rank, key): at + 1
        for rank, processes in by_rank.items()
        for at, key in enumerate(sorted(processes, key=lambda k: (processes[k], k)))
    }
    return {c.source: order[((c.rank, c.world_size), (c.host, c.pid))] for c in found}

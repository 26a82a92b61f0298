"""Which rows of different ranks are one instance of a collective: the pairing, decided once.

A rank's rows of its collectives are its collective kernels, or on a rank without any its host
collectives (``gloo:all_reduce``; on a rank with kernels, a ``nccl:all_reduce`` annotation is
the host side of a kernel, not a second collective: ``rank_rows``). Rows are first split by
run, process group and collective (``collectives.canonical``); within such a set:

1. **By sequence number** (``seq``), where every row of the set records Kineto's ``Seq``: the
   process group numbers its collectives, so (group, ``Seq``) is the instance whatever each
   rank's window holds.
2. **Else by aligned order** (``step order`` / ``order``). Where every row is in a
   ``ProfilerStep#N`` and some step number is on every rank, the rows are counted within their
   step (windows that cover different steps still pair); else over the whole window. Over the
   window (and in a step whose ranks hold different numbers of rows: a complete step holds the
   same collectives on every rank), each rank's rows in time order are aligned to those of a
   reference rank (the rank with the most rows, then the lowest) with the offset that best fits:
   first the fewest rows whose message size differs from their partner's; then the most
   constant difference between the partners' end times (the ranks of one instance all finish
   together, so paired as they ran, their ends differ by their clocks' offset alone, the same for
   every instance; shifted by one, by the varying time between instances); then the smallest
   shift. So when a rank's window opens after a collective the other ranks still hold (their
   copy was launched before their window), its rows shift by one and the rest still pair,
   whatever the offset between the ranks' clocks. Offsets are tried up to ``MAX_SHIFT`` rows,
   only where the two ranks share at least half of the shorter one's rows, and scored on at
   most ``TIMING_SAMPLE`` of them.

Where sizes and the time between instances cannot tell the offsets apart (a rank with one
instance, or a collective that recurs at a perfectly regular interval), plain order decides.
``Seq``, recorded by torch 2.2 and later on ``record_param_comms`` and copied by Kineto onto the
kernels, needs neither.

Two forms of one rule: ``numbers`` over columns (the analyses, the viewer), ``pair`` over
records (``verify``'s streaming scan).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

SEQ, STEP_ORDER, ORDER = "seq", "step order", "order"  # how an instance was matched
MAX_SHIFT = 64  # rows one rank's window may hold that another's does not, at one end
TIMING_SAMPLE = 512  # partner pairs, evenly spread, whose end differences score an offset
NO_STEP = -1


def rank_rows(is_kernel: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Of candidate rows (collective kernels and host collectives), those that stand for their
    rank's collectives: the kernels, and the host collectives of ranks without kernels."""
    with_kernels = np.isin(rank, np.unique(rank[is_kernel]))
    found: np.ndarray = is_kernel | ~with_kernels
    return found


def of_rank(kernels: Sequence[Arrival], host: Sequence[Arrival]) -> Sequence[Arrival]:
    """``rank_rows`` for one rank's records: its collective kernels, else its host collectives."""
    return kernels if kernels else host


def best_offset(ref_sizes: np.ndarray, ref_ends: np.ndarray, sizes: np.ndarray, ends: np.ndarray) -> int:
    """The ``k`` that pairs row ``i`` of a rank with row ``i + k`` of the reference (rows in time
    order): fewest size mismatches (as a share of the rows paired), then the most constant end
    difference (the mean absolute deviation from its median: a clock offset moves every partner's
    end alike), then the smallest |k|, then the smallest median |end difference|."""
    n, m = len(ref_sizes), len(sizes)
    if not n or not m:
        return 0
    shifts = np.arange(max(-(m - 1), -MAX_SHIFT), min(n - 1, MAX_SHIFT) + 1)
    overlap = np.minimum(m, n - shifts) - np.maximum(0, -shifts)
    shifts = shifts[overlap >= max(1, (min(n, m) + 1) // 2)]
    if not len(shifts):
        return 0
    mine = np.arange(0, m, max(1, m // TIMING_SAMPLE))  # the rank's rows scored, evenly spread
    partner = mine[None, :] + shifts[:, None]  # shift x row: the reference row it pairs with
    inside = (partner >= 0) & (partner < n)
    partner = np.clip(partner, 0, n - 1)
    paired = inside.sum(axis=1)
    mismatch = ((sizes[mine][None, :] != ref_sizes[partner]) & inside).sum(axis=1) / paired
    differences = np.where(inside, (ends[mine][None, :] - ref_ends[partner]).astype(np.float64), np.nan)
    ordered = np.sort(differences, axis=1)  # NaN last: each row's paired values first, in order
    rows = np.arange(len(shifts))
    middle = (ordered[rows, (paired - 1) // 2] + ordered[rows, paired // 2]) / 2  # np.median's
    spread = np.nansum(np.abs(differences - middle[:, None]), axis=1) / paired
    best = np.lexsort((shifts, np.abs(middle), np.abs(shifts), spread, mismatch))[0]
    return int(shifts[best])


def _aligned(rank: np.ndarray, sizes: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Each row's number in one set of rows (already in time order within each rank): its
    reference partner's position, densely renumbered from 0 in time order."""
    ranks, counts = np.unique(rank, return_counts=True)
    reference = ranks[np.lexsort((ranks, -counts))[0]]
    at_ref = rank == reference
    ref_sizes, ref_ends = sizes[at_ref], ends[at_ref]
    position = np.zeros(len(rank), dtype=np.int64)
    for r in ranks.tolist():
        mine = np.flatnonzero(rank == r)
        k = 0 if r == reference else best_offset(ref_sizes, ref_ends, sizes[mine], ends[mine])
        position[mine] = np.arange(len(mine)) + k
    _, dense = np.unique(position, return_inverse=True)
    found: np.ndarray = dense.reshape(-1).astype(np.int64)
    return found


def _places(bucket: np.ndarray, rank: np.ndarray) -> np.ndarray:
    """Each row's place among its rank's rows of its bucket (rows sorted by bucket, rank, time)."""
    if not len(rank):
        return np.zeros(0, dtype=np.int64)
    new = np.r_[True, (bucket[1:] != bucket[:-1]) | (rank[1:] != rank[:-1])]
    starts = np.flatnonzero(new)
    found: np.ndarray = np.arange(len(rank)) - np.repeat(starts, np.diff(np.r_[starts, len(rank)]))
    return found


def _pairs(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct (first, second) pairs, sorted, and how many rows each has."""
    if not len(first):
        return first, second, np.zeros(0, dtype=np.int64)
    order = np.lexsort((second, first))
    a, b = first[order], second[order]
    starts = np.flatnonzero(np.r_[True, (a[1:] != a[:-1]) | (b[1:] != b[:-1])])
    return a[starts], b[starts], np.diff(np.r_[starts, len(a)])


def _to_align(buckets: np.ndarray, rank: np.ndarray, scoped: bool) -> list[int]:
    """The buckets whose ranks' orders are aligned: the whole window always (windows open at
    different points); a step only where its ranks hold different numbers of rows (a complete step
    holds the same collectives on every rank)."""
    if not scoped:
        return [NO_STEP] if len(buckets) else []
    first, _, counts = _pairs(buckets, rank)
    # a bucket is uneven where its (bucket, rank) counts are not all alike: sorted by bucket, the
    # smallest and largest count of each bucket differ
    starts = np.flatnonzero(np.r_[True, first[1:] != first[:-1]])
    uneven = np.minimum.reduceat(counts, starts) != np.maximum.reduceat(counts, starts)
    return [int(b) for b in first[starts][uneven]]


def _steps_line_up(rank: np.ndarray, steps: np.ndarray) -> bool:
    """Whether every row is in a step and some step number is on every rank of the set."""
    if (steps < 0).any():
        return False
    first, _, _ = _pairs(steps, rank)
    _, ranks_per_step = np.unique(first, return_counts=True)
    return bool((ranks_per_step == len(np.unique(rank))).any())


@dataclass(frozen=True)
class Numbers:
    """Per row: the step it is counted in (``NO_STEP``: none), its number, and how it was matched."""

    step: np.ndarray
    number: np.ndarray
    how: np.ndarray  # SEQ, STEP_ORDER or ORDER


def numbers(
    key: np.ndarray, rank: np.ndarray, seq: np.ndarray, size: np.ndarray, end_ns: np.ndarray, *, step: np.ndarray
) -> Numbers:
    """The column form. ``key``: an int per (run, process group, collective); ``rank``: an int per
    rank; ``seq``: Kineto's ``Seq`` (-1: none); ``size``: the message size (-1: none); ``end_ns``:
    the row's end; ``step``: the ``ProfilerStep#N`` number it is in (-1: none). The rows of one
    (key, step, number) are one instance."""
    count = len(key)
    out_step = np.full(count, NO_STEP, dtype=np.int64)
    out_number = np.zeros(count, dtype=np.int64)
    out_how = np.full(count, ORDER, dtype=object)
    for value in np.unique(key).tolist():
        rows = np.flatnonzero(key == value)
        if (seq[rows] >= 0).all():
            out_number[rows], out_how[rows] = seq[rows], SEQ
            continue
        scoped = _steps_line_up(rank[rows], step[rows])
        buckets = step[rows] if scoped else np.full(len(rows), NO_STEP, dtype=np.int64)
        out_step[rows] = buckets
        out_how[rows] = STEP_ORDER if scoped else ORDER
        order = rows[np.lexsort((end_ns[rows], rank[rows], buckets))]  # by bucket, rank, time
        out_number[order] = _places(buckets[np.searchsorted(rows, order)], rank[order])
        for bucket in _to_align(buckets, rank[rows], scoped):
            part = order[out_step[order] == bucket]
            out_number[part] = _aligned(rank[part], size[part], end_ns[part])
    return Numbers(out_step, out_number, out_how)


@dataclass(frozen=True)
class Arrival:
    """The scalar form's row: one rank's row of a collective."""

    rank: int
    group: str
    collective: str  # in ``collectives.canonical``'s spelling
    seq: int = -1
    size_bytes: int = -1
    end_ns: int = 0
    step: int = NO_STEP


Instance = tuple[str, str, int, int]  # (group, collective, step, number)


def pair(arrivals: Sequence[Arrival]) -> dict[Instance, dict[int, Arrival]]:
    """The record form of ``numbers``, over one run's rows: each instance's row on each rank."""
    keys: dict[Hashable, int] = {}
    key = np.asarray([keys.setdefault((a.group, a.collective), len(keys)) for a in arrivals], dtype=np.int64)
    found = numbers(
        key,
        np.asarray([a.rank for a in arrivals], dtype=np.int64),
        np.asarray([a.seq for a in arrivals], dtype=np.int64),
        np.asarray([a.size_bytes for a in arrivals], dtype=np.int64),
        np.asarray([a.end_ns for a in arrivals], dtype=np.int64),
        step=np.asarray([a.step for a in arrivals], dtype=np.int64),
    )
    instances: dict[Instance, dict[int, Arrival]] = defaultdict(dict)
    for at, arrival in enumerate(arrivals):
        instance = (arrival.group, arrival.collective, int(found.step[at]), int(found.number[at]))
        instances[instance].setdefault(arrival.rank, arrival)
    return dict(instances)

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
   step (windows that cover different steps still pair); else over the whole window. Within
   that, each rank's rows in time order are aligned to those of a reference rank (the rank with
   the most rows, then the lowest) with the offset that best fits: first the fewest rows whose
   message size differs from their partner's; then the most constant difference between the
   partners' end times (the ranks of one instance all finish together, so paired as they ran,
   their ends differ by their clocks' offset alone, the same for every instance; shifted by one,
   by the varying time between instances); then the smallest shift. So when a rank's window
   opens after a collective the other ranks still hold (their copy was launched before their
   window), its rows shift by one and the rest still pair, whatever the offset between the
   ranks' clocks. Offsets are tried up to ``MAX_SHIFT`` rows, and only where the two ranks
   share at least half of the shorter one's rows.

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
    needed = max(1, (min(n, m) + 1) // 2)
    best: tuple[float, float, int, float, int] | None = None
    for k in range(max(-(m - 1), -MAX_SHIFT), min(n - 1, MAX_SHIFT) + 1):
        lo, hi = max(0, -k), min(m, n - k)
        if hi - lo < needed:
            continue
        mismatch = float(np.mean(sizes[lo:hi] != ref_sizes[lo + k : hi + k]))
        differences = (ends[lo:hi] - ref_ends[lo + k : hi + k]).astype(np.float64)
        middle = float(np.median(differences))
        spread = float(np.mean(np.abs(differences - middle)))
        score = (mismatch, spread, abs(k), abs(middle), k)
        if best is None or score < best:
            best = score
    return 0 if best is None else best[4]


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


def _steps_line_up(rank: np.ndarray, steps: np.ndarray) -> bool:
    """Whether every row is in a step and some step number is on every rank of the set."""
    if (steps < 0).any():
        return False
    pairs = np.unique(np.stack([steps, rank], axis=1), axis=0)
    _, ranks_per_step = np.unique(pairs[:, 0], return_counts=True)
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
        for bucket in np.unique(buckets).tolist():
            part = rows[buckets == bucket]
            part = part[np.lexsort((end_ns[part], rank[part]))]  # by rank, then time
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

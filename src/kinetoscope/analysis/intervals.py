"""Interval arithmetic on numpy arrays of start and end times (ns): unions, lengths, sweeps."""

from __future__ import annotations

import numpy as np


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals [start, end) as sorted, disjoint intervals."""
    if not len(starts):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    new_group = np.empty(len(s), dtype=bool)
    new_group[0] = True
    new_group[1:] = s[1:] > reach[:-1]
    group = np.cumsum(new_group) - 1
    merged_starts = s[new_group]
    merged_ends = np.zeros(len(merged_starts), dtype=np.int64)
    np.maximum.at(merged_ends, group, e)
    return merged_starts, merged_ends


def length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total time covered by the intervals (overlaps counted once)."""
    merged_starts, merged_ends = merge(starts, ends)
    return int((merged_ends - merged_starts).sum())


def sweep(sets: list[tuple[np.ndarray, np.ndarray]]) -> dict[int, int]:
    """Time spent in each combination of sets: bit i of the key is set when set i is active.

    Each set is first merged; the key 0 (nothing active) is left out.
    """
    times, deltas = [], []
    for bit, (starts, ends) in enumerate(sets):
        merged_starts, merged_ends = merge(starts, ends)
        times += [merged_starts, merged_ends]
        deltas += [np.full(len(merged_starts), 1 << bit, np.int64), np.full(len(merged_ends), -(1 << bit), np.int64)]
    if not times:
        return {}
    t = np.concatenate(times)
    d = np.concatenate(deltas)
    order = np.argsort(t, kind="stable")
    t, state = t[order], np.cumsum(d[order])
    spans = np.diff(t)
    active = state[:-1]
    keep = active > 0
    out: dict[int, int] = {}
    for key, total in zip(*_group_sum(active[keep], spans[keep]), strict=True):
        out[int(key)] = int(total)
    return out


def _group_sum(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    unique, inverse = np.unique(keys, return_inverse=True)
    sums = np.zeros(len(unique), dtype=np.int64)
    np.add.at(sums, inverse, values)
    return unique, sums

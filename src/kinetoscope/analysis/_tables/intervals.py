"""Interval arithmetic on numpy arrays of start and end times (ns): unions, lengths, sweeps."""

from __future__ import annotations

import numpy as np

from kinetoscope.analysis._tables import chunks


def merge(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The union of intervals [start, end) as sorted, disjoint intervals."""
    if not len(starts):
        return np.empty(0, np.int64), np.empty(0, np.int64)
    if bool((starts[1:] >= starts[:-1]).all()):  # in start order already (one thread's rows): no sort
        s, e = starts, ends
    else:
        order = np.argsort(starts, kind="stable")
        s, e = starts[order], ends[order]
    reach = np.maximum.accumulate(e)
    new_group = np.empty(len(s), dtype=bool)
    new_group[0] = True
    new_group[1:] = s[1:] > reach[:-1]
    merged_starts = s[new_group]
    if bool((e >= s).all()):  # a group's end is the reach at its last interval (earlier groups end before it)
        last = np.append(np.flatnonzero(new_group)[1:] - 1, len(s) - 1)
        return merged_starts, reach[last].astype(np.int64)
    merged_ends = np.zeros(len(merged_starts), dtype=np.int64)
    np.maximum.at(merged_ends, np.cumsum(new_group) - 1, e)
    return merged_starts, merged_ends


def length(starts: np.ndarray, ends: np.ndarray) -> int:
    """Total time covered by the intervals (overlaps counted once): in start order, each interval
    adds the time it reaches past the ends of all before it, ``chunks.CHUNK_ROWS`` intervals at a time
    (the union, ``merge``, holds its sorted and merged copies of every interval at once: 8 M host
    ops, about 380 MB). Intervals that end before they start are merged as ``merge`` takes them."""
    if not len(starts) or not bool((ends >= starts).all()):
        merged_starts, merged_ends = merge(starts, ends)
        return int((merged_ends - merged_starts).sum())
    if not bool((starts[1:] >= starts[:-1]).all()):
        order = np.argsort(starts, kind="stable")
        starts, ends = starts[order], ends[order]
    total, reach = 0, int(starts[0])
    for at in chunks.chunk_starts(len(starts)):
        s, e = starts[at : at + chunks.CHUNK_ROWS], ends[at : at + chunks.CHUNK_ROWS]
        before = np.empty(len(e), dtype=np.int64)  # the latest end of the intervals before each
        before[0], before[1:] = reach, e[:-1]
        np.maximum.accumulate(before, out=before)
        np.maximum(before, reach, out=before)
        total += int(np.maximum(e - np.maximum(s, before), 0).sum())
        reach = max(reach, int(before[-1]), int(e[-1]))
    return total


Spans = tuple[np.ndarray, np.ndarray]  # starts, ends


def subtract(kept: Spans, removed: Spans) -> Spans:
    """The time of ``kept``'s intervals outside ``removed``'s, as sorted, disjoint intervals."""
    (k0, k1), (r0, r1) = merge(*kept), merge(*removed)
    if not len(k0) or not len(r0):
        return k0, k1
    t = np.concatenate([k0, k1, r0, r1])
    d = np.concatenate([np.ones(len(k0), np.int64), -np.ones(len(k1), np.int64),
                        np.full(len(r0), 2, np.int64), np.full(len(r1), -2, np.int64)])
    order = np.argsort(t, kind="stable")
    t, state = t[order], np.cumsum(d[order])
    keep = (state[:-1] == 1) & (t[1:] > t[:-1])
    return merge(t[:-1][keep], t[1:][keep])


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
    return _state_sums(active[keep], spans[keep], 1 << len(sets))


def _state_sums(states: np.ndarray, spans: np.ndarray, count: int) -> dict[int, int]:
    """State -> the int64 sum of its spans, for each state of ``0..count-1`` that occurs, ascending:
    a few states over many spans, so counted, not sorted."""
    seen = np.bincount(states, minlength=count)
    return {state: int(spans[states == state].sum()) for state in np.flatnonzero(seen).tolist()}

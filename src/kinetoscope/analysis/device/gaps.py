"""The gaps between a rank's device work, on each stream and on each device, and what the host
was doing during them.

A timeline is a stream's device work (kernels, copies, sets), or all of a device's work merged
over its streams (``stream`` -1). A gap is the time from the end of the work done so far to the
start of the next work; each gap knows the work that ends it (its next op) and when that op's
launch call started (-1: no launch call in the trace).

The time of a gap is split, nanosecond by nanosecond, into:

* sync: the host sat in a call that waits for the device (the ``sync`` kind, or a call of
  ``model.blocking``, or the launch of a copy into pageable memory), so it queued nothing;
  except where the next op is a graph replay's node: once the replay was launched the host's
  wait for it idles nothing (``model.graphs``), so that time counts as queued;
* host_wait: before the next op's launch call started: nothing was queued; and, whenever it was
  queued, the time a host thread spent handing out a DataLoader batch (``model.data_loading``):
  the device waited for data loading;
* launch_latency: after its launch call started, up to ``launch_latency_max_ns``: queued, not started;
* other: queued for longer than that (waiting on an event or another stream), or no launch call.

A graph replay's nodes were all queued by its one graph launch call (``launch_ts_ns`` is that
call's start for each of them); ``replay_node`` marks the nodes after the first of each replay,
which are not launches of their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables import intervals, reuse
from kinetoscope.analysis._tables.column_arrays import ints, read_only, string_mask
from kinetoscope.analysis._tables.id_lookup import id_positions
from kinetoscope.analysis._tables.masks import is_in, matches
from kinetoscope.analysis._tables.selection import device_work_rows, without_args
from kinetoscope.model import blocking, graphs, kinds
from kinetoscope.model.data_loading import LOADER_NEXT

CATEGORIES = ("host_wait", "launch_latency", "sync", "other")
NO_INTERVALS: intervals.Spans = (np.zeros(0, np.int64), np.zeros(0, np.int64))


@dataclass(frozen=True)
class Work:
    """One rank's device work, in row order."""

    ids: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    launch_ts_ns: np.ndarray  # start of the call that launched it; -1 when not in the trace
    replayed: np.ndarray  # bool: queued by a graph launch call (a node of a CUDA/HIP graph replay)
    replay_node: np.ndarray  # bool: a replay's node after its first (queued by the replay, not launched)


@dataclass(frozen=True)
class Timeline:
    """The gaps of one timeline: ``next_row`` indexes ``Work``; categories are ns per gap."""

    device: int
    stream: int
    rows: np.ndarray  # the timeline's work, by start time
    gap_start_ns: np.ndarray
    gap_end_ns: np.ndarray
    next_row: np.ndarray
    split_ns: dict[str, np.ndarray]
    span_ns: int  # first start to last end
    busy_ns: int  # time with work running (overlaps once)

    @property
    def gap_ns(self) -> np.ndarray:
        found: np.ndarray = self.gap_end_ns - self.gap_start_ns
        return found


def rank_work(events: pa.Table) -> Work:
    """The device work of one rank's ``events``, with the start of each op's launch call; found
    once per table inside ``reuse.reusing()`` (the idle and launch analyses ask)."""
    return reuse.cached(events, "rank_work", lambda: _rank_work(events))


def _rank_work(events: pa.Table) -> Work:
    work = device_work_rows(without_args(events))  # the rules' events have args: these rows read none
    starts = ints(work, "ts_ns")
    at = id_positions(events, ints(work, "launch_id"))
    launch = np.where(at >= 0, ints(events, "ts_ns")[np.maximum(at, 0)], -1) if len(at) else np.zeros(0, np.int64)
    return Work(
        ints(work, "id"),
        starts,
        starts + ints(work, "dur_ns"),
        ints(work, "device").astype(np.int64),
        ints(work, "stream") if "stream" in work.column_names else np.full(work.num_rows, -1, np.int64),
        launch.astype(np.int64),
        *_replay_nodes(events, at, starts),
    )


def _replay_nodes(events: pa.Table, at: np.ndarray, starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(work whose launch call, row ``at``, replays a graph; those of it that are not the first of
    their replay to start)."""
    later = np.zeros(len(at), dtype=bool)
    if not len(at):
        return later, later.copy()
    replayed = (at >= 0) & matches(events, "name", graphs.LAUNCH_PATTERN)[np.maximum(at, 0)]
    nodes = np.flatnonzero(replayed)
    if len(nodes):
        order = nodes[np.lexsort((starts[nodes], at[nodes]))]  # by replay, then start
        first = np.r_[True, at[order][1:] != at[order][:-1]]
        later[order[~first]] = True
    return replayed, later


def blocked(events: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """The merged intervals of one rank during which its host waited for the device; found once
    per table inside ``reuse.reusing()``, read-only."""
    return reuse.cached(events, "blocked", lambda: _blocked(events))


def _blocked(events: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    starts, ends = _blocked_intervals(events)
    return read_only(starts), read_only(ends)


def _blocked_intervals(events: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    calls = is_in(events, "name", blocking.QUERY_CALLS)
    rows = is_in(events, "kind", (kinds.SYNC,))
    caller = id_positions(events, ints(events, "launch_id")[rows])
    rows[np.flatnonzero(rows)[(caller >= 0) & calls[np.maximum(caller, 0)]]] = False  # a query returns at once
    rows |= is_in(events, "kind", (kinds.RUNTIME_CALL,)) & is_in(events, "name", blocking.SYNC_CALLS)
    copies = is_in(events, "kind", kinds.MEMORY_WORK_KINDS) & string_mask(events, "name", _pageable)
    callers = id_positions(events, ints(events, "launch_id")[copies])
    rows[callers[callers >= 0]] = True
    starts = ints(events, "ts_ns")[rows]
    return intervals.merge(starts, starts + ints(events, "dur_ns")[rows])


def loading(events: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """The merged intervals of one rank during which a host thread handed out a DataLoader batch
    and did not wait for the device (that time is ``blocked``'s); found once per table inside
    ``reuse.reusing()``, read-only."""
    return reuse.cached(events, "loading", lambda: _loading(events))


def _loading(events: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    rows = is_in(events, "kind", kinds.OP_KINDS) & matches(events, "name", LOADER_NEXT)
    starts = ints(events, "ts_ns")[rows]
    found = intervals.subtract((starts, starts + ints(events, "dur_ns")[rows]), blocked(events))
    return read_only(found[0]), read_only(found[1])


def _pageable(names: pa.Array) -> pa.Array:
    import pyarrow.compute as pc

    return pc.and_(pc.starts_with(names, "Memcpy"), pc.match_substring(names, blocking.BLOCKING_COPY_MARK))


def timelines(
    work: Work, block: tuple[np.ndarray, np.ndarray], latency_max_ns: int, load: intervals.Spans = NO_INTERVALS
) -> Iterator[Timeline]:
    """Each stream's timeline, then its device's (stream -1), by device then stream; work with no
    stream (-1) is on its device's timeline only. ``load``: ``loading``'s intervals (none: no gap
    time counts as data loading)."""
    for device in _distinct(work.device):
        on_device = np.flatnonzero(work.device == device)
        for stream in _distinct(work.stream[on_device]):
            if stream < 0:  # no stream recorded: only the device's timeline is known
                continue
            chosen = on_device[work.stream[on_device] == stream]
            yield _timeline(work, chosen, (device, stream), (block, load), latency_max_ns)
        yield _timeline(work, on_device, (device, -1), (block, load), latency_max_ns)


def _distinct(values: np.ndarray) -> list[int]:
    """``np.unique(values)`` as ints, counted rather than sorted when they span a short range
    (a rank's devices and streams: a few small numbers over many rows)."""
    if not len(values):
        return []
    low, high = int(values.min()), int(values.max())
    if high - low > _COUNTED_SPAN:
        return [int(value) for value in np.unique(values).tolist()]
    present: list[int] = (np.flatnonzero(np.bincount(values - low, minlength=high - low + 1)) + low).tolist()
    return present


_COUNTED_SPAN = 1 << 16  # values spread over at most this many are counted


def _timeline(
    work: Work,
    rows: np.ndarray,
    place: tuple[int, int],
    host: tuple[intervals.Spans, intervals.Spans],
    latency_max_ns: int,
) -> Timeline:
    """The gaps of ``rows`` of ``work``, on ``place`` (device, stream); ``host``: (blocked, loading)."""
    starts = work.start_ns[rows]
    if not bool((starts[1:] >= starts[:-1]).all()):  # a stream's work is in start order already: no sort
        rows = rows[np.argsort(starts, kind="stable")]
    reach = np.maximum.accumulate(work.end_ns[rows]) if len(rows) else np.zeros(0, np.int64)
    gap_start, gap_end = reach[:-1], work.start_ns[rows][1:]
    keep = gap_end > gap_start
    next_row = rows[1:][keep]
    g0, g1 = gap_start[keep], gap_end[keep]
    parts = _split_by_chunk((g0, g1), work, next_row, host, latency_max_ns)
    span = int(reach[-1] - work.start_ns[rows[0]]) if len(rows) else 0
    return Timeline(*place, rows, g0, g1, next_row, parts, span, span - int((g1 - g0).sum()))


SPLIT_GAPS = 1 << 16  # gaps ``split`` at a time: its twenty-odd temporaries take 8 bytes a gap each


def _split_by_chunk(
    gaps: intervals.Spans, work: Work, next_row: np.ndarray, host: tuple[intervals.Spans, intervals.Spans],
    latency_max_ns: int,
) -> dict[str, np.ndarray]:
    """``split`` of the ``gaps`` (starts, ends) ended by ``next_row`` of ``work``, ``SPLIT_GAPS`` at a
    time (each gap's split is its own); ``host``: (blocked, loading)."""
    (g0, g1), (block, load) = gaps, host
    pieces = [
        split(g0[at : at + SPLIT_GAPS], g1[at : at + SPLIT_GAPS], work.launch_ts_ns[next_row[at : at + SPLIT_GAPS]],
              block, latency_max_ns, replayed=work.replayed[next_row[at : at + SPLIT_GAPS]], load=load)
        for at in range(0, max(len(g0), 1), SPLIT_GAPS)
    ]  # fmt: skip
    if len(pieces) == 1:
        return pieces[0]
    return {name: np.concatenate([piece[name] for piece in pieces]) for name in CATEGORIES}


def covered(t: np.ndarray, block: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """For each time of ``t``, the blocked time before it (``block`` merged and sorted)."""
    b0, b1 = block
    if not len(b0):
        return np.zeros(len(t), np.int64)
    before = np.concatenate([[0], np.cumsum(b1 - b0)])
    k = np.searchsorted(b0, t, side="left")  # intervals starting before t
    last_end = b1[np.maximum(k - 1, 0)]
    partial = np.where(k > 0, np.maximum(last_end - t, 0), 0)
    found: np.ndarray = before[k] - partial
    return found


def split(
    g0: np.ndarray,
    g1: np.ndarray,
    launch_ns: np.ndarray,
    block: tuple[np.ndarray, np.ndarray],
    latency_max_ns: int,
    *,
    replayed: np.ndarray | None = None,
    load: intervals.Spans = NO_INTERVALS,
) -> dict[str, np.ndarray]:
    """Each gap [g0, g1) split into the CATEGORIES (ns), given its next op's launch start and
    whether that op is a graph replay's node (its wait after the replay's launch is queueing);
    ``load`` (``loading``'s intervals, disjoint from ``block``) is host wait wherever it falls."""
    known = launch_ns >= 0
    cut = np.where(known, np.minimum(np.maximum(launch_ns, g0), g1), g1)  # the launch call's start, within the gap
    at_start, at_cut, at_end = covered(g0, block), covered(cut, block), covered(g1, block)
    waited_queued = at_end - at_cut  # blocked after the launch: sync, unless the work is a replay's
    if replayed is not None:
        waited_queued = np.where(replayed & known, 0, waited_queued)
    # data loading not counted as host wait yet: after the launch call's start (or in the whole gap)
    loaded = covered(g1, load) - covered(np.where(known, cut, g0), load)
    host = np.where(known, (cut - g0) - (at_cut - at_start), 0) + loaded
    latency = np.where(known, np.minimum((g1 - cut) - waited_queued - loaded, latency_max_ns), 0)
    sync = (at_cut - at_start) + waited_queued
    other = (g1 - g0) - sync - host - latency
    return {"host_wait": host, "launch_latency": latency, "sync": sync, "other": other}

"""Tracks and lanes: where each event is drawn, decided once for every sink.

A track is one row of a timeline: a host thread's framework rows; that thread's runtime
calls, driver calls or collectives; a device's synchronizations; an allocator; a device
stream's work or its annotations. These are the tracks of the system and device traces
(``ntrace.pb``, ``device_N.pb``), and the dataset's ``tracks`` table. A lane is a row within
a track: framework rows take their nesting depth, other tracks pack their own intervals
(an event goes to the first lane free at its start), so runtime calls never inherit the
depths of the framework thread they were recorded on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kinetoscope.model import kinds, ops
from kinetoscope.model.track_names import (
    Lanes,
    device_track_name,
    lane_track_name,
    sync_track_name,
    thread_label,
    thread_track_name,
)

__all__ = ["Found", "Lanes", "Tracks", "assign", "device_track_name", "found", "lane_track_name", "placed",
           "sync_track_name", "thread_label", "thread_track_name"]  # fmt: skip
K = kinds.KIND_CODES
L = kinds.LAYER_CODES
# Runtime kinds whose tracks belong to a device or an allocator rather than to a thread.
_PER_DEVICE = (K[kinds.SYNC], K[kinds.ALLOCATION])


@dataclass
class Tracks:
    """Per row its track (position in the track arrays) and lane; per track its key columns."""

    of_row: np.ndarray
    lane: np.ndarray
    layer: np.ndarray
    group: np.ndarray  # kind code of the track's rows where it splits tracks, else -1
    pid: np.ndarray
    tid: np.ndarray
    device: np.ndarray
    stream: np.ndarray
    lanes: np.ndarray  # lane count of each track

    def names(self, thread_names: dict[tuple[int, int], str]) -> list[str]:
        return [_name(row, thread_names) for row in zip(*self._columns(), strict=True)]

    def _columns(self) -> tuple[list[int], ...]:
        return tuple(a.tolist() for a in (self.layer, self.group, self.pid, self.tid, self.device, self.stream))


@dataclass
class Found:
    """Per row its track (position in ``table``, int32 where the rows fit); per track its six key
    columns (layer, pid, tid, group, device, stream), one row each."""

    of_row: np.ndarray
    table: np.ndarray


def assign(keys: dict[str, np.ndarray], depth: np.ndarray) -> Tracks:
    """The track and lane of every row from its layer, kind, pid, tid, device and stream."""
    return placed(found(keys), keys, depth)


def found(keys: dict[str, np.ndarray]) -> Found:
    """The track of every row from its layer, kind, pid, tid, device and stream: what ``placed`` needs
    of those four id columns (so that they can go before the rows' nesting is known)."""
    table, of_row = _distinct_rows(_TrackColumns(keys))
    return Found(of_row, table)


def placed(tracks: Found, keys: dict[str, np.ndarray], depth: np.ndarray) -> Tracks:
    """The rows' tracks (``found``) with every row's lane, from its layer, depth, start and end."""
    of_row, unique = tracks.of_row, tracks.table
    lane = _lanes(keys["layer"] == L[kinds.FRAMEWORK], depth, of_row, keys["ts_ns"], keys["end_ns"])
    lanes = np.zeros(len(unique), dtype=np.int64)
    np.maximum.at(lanes, of_row, lane + 1)
    layer_t, pid_t, tid_t, group_t, device_t, stream_t = (unique[:, i] for i in range(6))
    return Tracks(of_row, lane.astype(np.int32, copy=False), layer_t, group_t, pid_t, tid_t, device_t, stream_t, lanes)


class _TrackColumns:
    """The six columns that key a row's track (layer, pid, tid, group, device, stream), made one
    at a time for the rows asked, with the masks they are made from: whole-length copies of all
    six at once cost 48 bytes per event."""

    COUNT = 6

    def __init__(self, keys: dict[str, np.ndarray]) -> None:
        self.keys = keys
        self.rows = len(keys["layer"])

    def column(self, index: int, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
        keys = self.keys
        layer, kind = keys["layer"][rows], keys["kind"][rows]
        runtime, on_device = layer == L[kinds.RUNTIME], layer == L[kinds.DEVICE]
        if index == 0:
            return layer.astype(np.int64)
        host = ~on_device & ~(runtime & np.isin(kind, _PER_DEVICE))
        if index == 1:
            return np.where(host, keys["pid"][rows], -1)
        if index == 2:
            return np.where(host, keys["tid"][rows], -1)
        if index == 3:
            group = np.where(on_device & (kind == K[kinds.DEVICE_ANNOTATION]), K[kinds.DEVICE_ANNOTATION], -1)
            return np.where(runtime, kind.astype(np.int64), group)
        if index == 4:
            return np.where(host, -1, keys["device"][rows])
        return np.where(on_device, keys["stream"][rows], -1)


def _lanes(
    framework: np.ndarray, depth: np.ndarray, track: np.ndarray, ts_ns: np.ndarray, end_ns: np.ndarray
) -> np.ndarray:
    """Framework rows' lane is their depth; the other rows are packed track by track (no track
    holds both, so only the other rows are packed)."""
    lane = np.asarray(depth).astype(np.int32)
    packed = np.flatnonzero(~framework)
    lane[packed] = _packed(track[packed], ts_ns[packed], end_ns[packed])
    return lane


def _distinct_rows(columns: _TrackColumns) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows in sorted order, each row's index among them, int32 where the rows fit) of
    the table whose columns these are, ``CHUNK_ROWS`` rows at a time: a trace has a few dozen
    tracks, whatever its length, so what is held for every row is only its index."""
    count = columns.rows
    of_row = np.empty(count, dtype=ops.position_dtype(count))
    found: dict[tuple[int, ...], int] = {}  # distinct row -> its index in the order first found
    for at in range(0, count, CHUNK_ROWS):
        rows = slice(at, min(count, at + CHUNK_ROWS))
        table, of_chunk_row = _distinct_of_rows([columns.column(i, rows) for i in range(columns.COUNT)])
        index = [found.setdefault(row, len(found)) for row in map(tuple, table.tolist())]
        of_row[rows] = np.asarray(index, np.int64)[of_chunk_row]
    table = np.asarray(sorted(found), dtype=np.int64).reshape(len(found), columns.COUNT)
    rank = np.empty(len(found), dtype=of_row.dtype)  # the sorted place of each row in the order found
    rank[[found[row] for row in map(tuple, table.tolist())]] = np.arange(len(found), dtype=of_row.dtype)
    for at in range(0, count, CHUNK_ROWS):
        of_row[at : at + CHUNK_ROWS] = rank[of_row[at : at + CHUNK_ROWS]]
    return table, of_row


def _distinct_of_rows(values: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """(distinct rows in sorted order, each row's index among them) of the table of these columns.
    Runs of equal rows (a trace lists a thread's or a stream's events together) are coded once, by
    their first row; each column is coded on its own, then the codes are combined into one integer
    per row (``np.unique(axis=0)`` sorts whole rows, several times slower)."""
    same = np.ones(len(values[0]), dtype=bool)
    for column in values:
        same[1:] &= column[1:] == column[:-1]
    same[0] = False  # the first row starts a run
    first = np.flatnonzero(~same)
    del same
    rows = len(values[0])
    runs = values  # each column replaced by its runs' first rows, one at a time
    for index in range(len(runs)):
        runs[index] = runs[index][first]
    key = np.zeros(len(first), dtype=np.int64)
    for column in runs:  # a few dozen distinct values per column: the product stays far below 2^63
        distinct = np.unique(column)
        key *= max(len(distinct), 1)
        key += np.searchsorted(distinct, column)
    _, at, of_run = np.unique(key, return_index=True, return_inverse=True)
    table = np.stack([column[at] for column in runs], axis=1)
    return table, np.repeat(of_run, np.diff(first, append=rows))


CHUNK_ROWS = 1 << 16


def _packed(track: np.ndarray, ts_ns: np.ndarray, end_ns: np.ndarray) -> np.ndarray:
    """Lanes from packing each track's intervals in start order (first lane free at the start).

    Tracks whose intervals never overlap (most runtime and device tracks) are all lane 0; the
    few that do (concurrent kernels on one stream) are packed one by one."""
    lane = np.zeros(len(track), dtype=np.int64)
    if len(track) < 2:
        return lane
    order = np.lexsort((ts_ns - end_ns, ts_ns, track))
    t, s, e = track[order], ts_ns[order], end_ns[order]
    reach = _running_max_by_track(t, e)
    overlaps = (t[1:] == t[:-1]) & (s[1:] < reach[:-1])
    for key in np.unique(t[1:][overlaps]).tolist():
        rows = order[t == key]
        lane[rows] = _greedy(ts_ns[rows].tolist(), end_ns[rows].tolist())
    return lane


def _running_max_by_track(track: np.ndarray, end_ns: np.ndarray) -> np.ndarray:
    """For sorted ``track``, the running maximum of ``end_ns`` within each track."""
    starts = np.r_[0, np.flatnonzero(track[1:] != track[:-1]) + 1]
    out = end_ns.copy()
    for a, b in zip(starts.tolist(), [*starts[1:].tolist(), len(track)], strict=True):
        out[a:b] = np.maximum.accumulate(end_ns[a:b])
    return out


def _greedy(starts: list[int], ends: list[int]) -> list[int]:
    lanes = Lanes()
    return [lanes.place(start, end) for start, end in zip(starts, ends, strict=True)]


def _name(track: tuple[int, ...], threads: dict[tuple[int, int], str]) -> str:
    """The display name of a track given as (layer, group, pid, tid, device, stream)."""
    layer, group, pid, tid, device, stream = track
    if layer == L[kinds.DEVICE]:
        return device_track_name(stream, group == K[kinds.DEVICE_ANNOTATION])
    if group == K[kinds.SYNC]:
        return sync_track_name(device)
    if group == K[kinds.ALLOCATION]:
        return "memory · host" if device < 0 else f"memory · device {device}"
    thread = thread_label(tid, threads.get((pid, tid), ""))
    if layer == L[kinds.FRAMEWORK]:
        return thread
    return thread_track_name(thread, kinds.KINDS[group])

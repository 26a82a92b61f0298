"""Names of the processes and threads of a merged trace: one host process per rank, one
process per device of a rank, threads and streams under them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

import pyarrow as pa


class ExportCounts(NamedTuple):
    """What a merged trace holds, counted the same way in every format."""

    slices: int  # slices and instants
    counter_samples: int
    flows: int  # arrows from one slice to another

    def describe(self) -> str:
        return f"{self.slices:,} slices, {self.counter_samples:,} counter samples and {self.flows:,} flows"


@dataclass(frozen=True)
class Track:
    out_pid: int
    out_tid: int
    run: str
    rank: int
    device: int
    pid: int
    name: str  # the track's name in the dataset (``tracks.name``)

    @property
    def process_name(self) -> str:
        where = f"device {self.device}" if self.device >= 0 else f"host pid {self.pid}"
        return f"rank {self.rank} · {where}"

    @property
    def thread_name(self) -> str:
        return self.name


class TrackNames:
    def __init__(self, tracks: pa.Table, shifts_ns: Mapping[tuple[str, int], int] | None = None) -> None:
        self.tracks = [Track(**row) for row in tracks.to_pylist()]
        self.several_runs = len({t.run for t in self.tracks}) > 1
        self.shifts_ns = dict(shifts_ns or {})  # (run, rank) -> ns taken off its times (clock alignment)

    def process_label(self, track: Track) -> str:
        label = f"{track.run} · {track.process_name}" if self.several_runs else track.process_name
        shift = self.shifts_ns.get((track.run, track.rank))
        return f"{label} · clock {-shift / 1e6:+.3f} ms (aligned)" if shift else label

    def processes(self) -> dict[int, Track]:
        return {t.out_pid: t for t in self.tracks}

    def metadata_events(self) -> list[dict[str, Any]]:
        """Chrome ``M`` events naming and ordering every process and thread."""
        events: list[dict[str, Any]] = []
        for pid, track in sorted(self.processes().items()):
            events.append(
                {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": self.process_label(track)}}
            )
            events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        for track in self.tracks:
            events.append(
                {
                    "ph": "M",
                    "name": "thread_name",
                    "pid": track.out_pid,
                    "tid": track.out_tid,
                    "args": {"name": track.thread_name},
                }
            )
        return events

"""The lane tracks of one base track: overlapping slices on a stream or thread go to lanes under it."""

from __future__ import annotations

from kinetoscope.format.perfetto_packets.events import EventFile
from kinetoscope.model import execution as ke
from kinetoscope.model import track_names as model_tracks

_MASK64 = (1 << 64) - 1


class LaneTracks:
    """The lane tracks of one base track (a stream, a thread's runtime calls...), declared as lanes open."""

    def __init__(self, out: EventFile, base: str, parent: int | None, lanes: model_tracks.Lanes) -> None:
        self.out = out
        self.base = base
        self.parent = parent
        self.lanes = lanes
        self.uuids: list[int] = []

    def write(self, execution: ke.Execution) -> None:
        """Write ``execution`` as a slice on the first lane where it overlaps nothing."""
        ts_ns = execution.ts_ns
        lane = self.lanes.place(ts_ns, ts_ns + execution.dur_ns)
        track = self.uuids[lane] if lane < len(self.uuids) else self._declare(lane)
        correlation = execution.correlation
        args = execution.args
        if correlation is not None and 0 <= correlation <= _MASK64:
            # Written as the slice's correlation_id, not repeated as an annotation (the args are this event's own).
            args.pop("correlation", None)
        self.out.slice(
            track,
            ts_ns,
            execution.dur_ns,
            name=execution.name,
            category=execution.category,
            annotations=args.items(),
            correlation=correlation,
            flow_out=execution.flow_out,
            flow_in=execution.flow_in,
        )

    def _declare(self, lane: int) -> int:
        name = model_tracks.lane_track_name(self.base, lane)
        uuid = self.out.track(name, name, parent=self.parent, rank=lane)
        self.uuids.append(uuid)
        return uuid

"""Track names and lane packing in their scalar form, without numpy: what the `.pb` conversion (on
the capture path, which stays light) asks ``model.tracks`` for. ``model.tracks`` gives the same
names to the dataset's tracks and packs its lanes with ``Lanes``.
"""

from __future__ import annotations

from kinetoscope.model import kinds


class Lanes:
    """The scalar form of lane packing, one track's intervals given one at a time (the ``.pb``
    conversion): an interval goes to the first lane whose last interval ended at or before its
    start, else to a new lane. The column form packs each track in start order (``_greedy``)."""

    def __init__(self) -> None:
        self.ends_ns: list[int] = []

    def place(self, start_ns: int, end_ns: int) -> int:
        for lane, lane_end_ns in enumerate(self.ends_ns):
            if lane_end_ns <= start_ns:
                self.ends_ns[lane] = end_ns
                return lane
        self.ends_ns.append(end_ns)
        return len(self.ends_ns) - 1


# Track names: one function per kind of track, used by the dataset (``Tracks.names``) and the
# ``.pb`` conversion alike (the conformance test holds them equal).
def device_track_name(stream: int, annotations: bool = False) -> str:
    """A device stream's track (its work, or its annotations)."""
    return f"stream {stream}" + (" · annotations" if annotations else "")


def sync_track_name(device: int) -> str:
    """A device's synchronizations."""
    return f"device {device} · synchronization"


def thread_label(tid: int | str, name: str = "") -> str:
    """A host thread: its ``thread_name`` where the trace gives one, else its id."""
    return name or f"thread {tid}"


def thread_track_name(thread: str, kind: str) -> str:
    """A host thread's runtime calls, driver calls or collectives (``thread``: its ``thread_label``)."""
    return f"{thread} · {'collectives' if kind == kinds.COLLECTIVE else kind}"


def lane_track_name(base: str, lane: int) -> str:
    """The name of a track's lane where a sink writes each lane as a track of its own (lane 0: the track)."""
    return base if lane == 0 else f"{base} · lane {lane + 1}"

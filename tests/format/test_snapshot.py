"""Snapshot files: written in PyTorch's structure, read back without ever running code."""

from __future__ import annotations

import pickle
import pickletools
import subprocess
from pathlib import Path

import pytest

from kinetoscope import FormatError
from kinetoscope.format.snapshot import dumps_snapshot, load_snapshot, loads_plain, summarize

from ..conftest import PYTHON

# Opcodes the unpickler in PyTorch's MemoryViz.js (pytorch.org/memory_viz) implements.
MEMORY_VIZ_OPCODES = {
    "PROTO", "FRAME", "STOP", "MARK", "MEMOIZE", "BINPUT", "LONG_BINPUT", "BINGET", "LONG_BINGET",
    "EMPTY_DICT", "DICT", "SETITEM", "SETITEMS", "EMPTY_LIST", "LIST", "APPEND", "APPENDS",
    "EMPTY_TUPLE", "TUPLE", "TUPLE1", "TUPLE2", "TUPLE3", "NONE", "NEWTRUE", "NEWFALSE",
    "BININT", "BININT1", "BININT2", "LONG1", "BINFLOAT", "SHORT_BINUNICODE", "BINUNICODE",
}


def tiny_snapshot() -> dict[str, object]:
    frames = [{"filename": "train.py", "name": "step", "line": 12},
              {"filename": "train.py", "name": "<module>", "line": 40}]
    entry = {"action": "alloc", "addr": 0x5555_0000_1000, "size": 4096, "stream": 0, "time_us": 1_796_000_000_000_000,
             "frames": frames}
    block = {"address": 0x5555_0000_1000, "size": 4096, "requested_size": 4096, "state": "active_allocated",
             "frames": frames}
    segment = {"device": 0, "address": 0x5555_0000_1000, "total_size": 4096, "allocated_size": 4096,
               "active_size": 4096, "requested_size": 4096, "stream": 0, "segment_type": "small",
               "segment_pool_id": (0, 0), "is_expandable": False, "frames": frames, "blocks": [block]}
    return {"segments": [segment], "device_traces": [[entry]], "kinetoscope": {"format": 1, "rank": 3, "ratio": 0.5}}


class RunsCode:
    """A pickle payload that would create ``marker`` if it were ever unpickled normally."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, ...]:
        return (subprocess.call, (["touch", str(self.marker)],))


def test_round_trip_keeps_every_value(tmp_path: Path) -> None:
    snapshot = tiny_snapshot()
    path = tmp_path / "memory_snapshot_rank3.pickle"
    path.write_bytes(dumps_snapshot(snapshot))
    assert load_snapshot(path) == snapshot
    summary = summarize(load_snapshot(path))
    assert (summary.segments, summary.live_blocks, summary.live_bytes) == (1, 1, 4096)
    assert summary.actions == {"alloc": 1} and summary.metadata["rank"] == 3


def test_written_snapshots_use_only_opcodes_memory_viz_reads() -> None:
    data = dumps_snapshot(tiny_snapshot() | {"long_name": "x" * 300})
    used = {op.name for op, _arg, _pos in pickletools.genops(data)}
    assert used <= MEMORY_VIZ_OPCODES, used - MEMORY_VIZ_OPCODES


def test_crafted_pickle_is_refused_and_nothing_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    crafted = tmp_path / "memory_snapshot_rank0.pickle"
    crafted.write_bytes(pickle.dumps({"segments": [RunsCode(marker)], "device_traces": []}))

    with pytest.raises(FormatError, match=r"refused: it refers to subprocess\.call") as caught:
        load_snapshot(crafted)
    assert str(crafted) in str(caught.value)
    assert not marker.exists()

    # the payload is live: a plain pickle.load in another process does run it
    subprocess.run([PYTHON, "-c", f"import pickle; pickle.load(open({str(crafted)!r}, 'rb'))"], check=True)
    assert marker.exists()


@pytest.mark.parametrize("payload", [
    pickle.dumps(pickle.PickleBuffer(b"abc"), protocol=5, buffer_callback=lambda _b: False),  # out-of-band
    b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00P0\n.",  # persistent id
])
def test_other_ways_to_reach_objects_are_refused(payload: bytes) -> None:
    with pytest.raises(FormatError):
        loads_plain(payload, "crafted.pickle")


def test_truncated_file_names_the_problem(tmp_path: Path) -> None:
    path = tmp_path / "cut.pickle"
    path.write_bytes(dumps_snapshot(tiny_snapshot())[:40])
    with pytest.raises(FormatError, match="cut short"):
        load_snapshot(path)


@pytest.mark.parametrize(("value", "problem"), [
    ([1, 2], "expected a dict"),
    ({"device_traces": []}, "'segments'"),
    ({"segments": [], "device_traces": [[{"action": "explode"}]]}, r"device_traces\[0\]\[0\]"),
])
def test_plain_data_that_is_not_a_snapshot_is_refused(tmp_path: Path, value: object, problem: str) -> None:
    path = tmp_path / "other.pickle"
    path.write_bytes(pickle.dumps(value))
    with pytest.raises(FormatError, match=problem):
        load_snapshot(path)

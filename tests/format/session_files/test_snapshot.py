"""Snapshot files: written in PyTorch's structure, read back without ever running code."""

from __future__ import annotations

import pickle
import pickletools
import subprocess
from pathlib import Path

import pytest

from kinetoscope import FormatError
from kinetoscope.format.session_files.snapshot import dumps_snapshot, load_snapshot, loads_plain, summarize

from ...conftest import PYTHON

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


# --- fields readers use, checked before anything uses them --------------------------------------


def _with(change: object) -> dict[str, object]:
    snapshot = tiny_snapshot()
    change(snapshot)  # type: ignore[operator]
    return snapshot


def _set_entry(name: str, value: object) -> object:
    return lambda s: s["device_traces"][0][0].__setitem__(name, value)


def _set_block(name: str, value: object) -> object:
    return lambda s: s["segments"][0]["blocks"][0].__setitem__(name, value)


@pytest.mark.parametrize(
    ("change", "place"),
    [
        (lambda s: s.__setitem__("segments", ["x"]), "segments[0] is str 'x', not a segment"),
        (_set_entry("addr", "x"), "device_traces[0][0].addr is str 'x', not an integer"),
        (_set_entry("size", float("nan")), "device_traces[0][0].size is float nan, not an integer"),
        (_set_entry("time_us", float("inf")), "device_traces[0][0].time_us is float inf"),
        (_set_entry("stream", [1]), "device_traces[0][0].stream is list [1]"),
        (_set_entry("addr", 2**64), "device_traces[0][0].addr is 18446744073709551616, beyond the 63-bit range"),
        (_set_entry("time_us", 2**60), "device_traces[0][0].time_us is 1152921504606846976, beyond"),
        (_set_block("size", True), "segments[0].blocks[0].size is bool True, not an integer"),
        (_set_block("state", "\ud800"), "segments[0].blocks[0].state holds a string that is not valid Unicode"),
        (lambda s: s["segments"][0]["frames"].__setitem__(0, {"filename": "a\udfff", "line": 1}),
         "segments[0].frames[0].filename holds a string that is not valid Unicode"),
        (lambda s: s["segments"][0].__setitem__("blocks", ["b"]), "segments[0].blocks[0] is str 'b', not a block"),
        (lambda s: s["segments"][0].__setitem__("frames", 3), "segments[0].frames is int 3, not a list of frames"),
        (lambda s: s["kinetoscope"].__setitem__("host", "\ud800"), "the snapshot holds a string that is not valid"),
    ],
    ids=["segment-str", "addr-str", "nan", "inf", "list", "2^64", "time-past-ns", "bool", "surrogate",
         "surrogate-frame", "block-str", "frames-int", "surrogate-metadata"],
)  # fmt: skip
def test_a_field_readers_cannot_use_is_refused_naming_the_file_and_place(
    change: object, place: str, tmp_path: Path
) -> None:
    path = tmp_path / "memory_snapshot_rank0.pickle"
    path.write_bytes(pickle.dumps(_with(change), protocol=4))
    with pytest.raises(FormatError) as caught:
        load_snapshot(path)
    assert str(caught.value).startswith(f"{path}: not a memory snapshot: ") and place in str(caught.value)


def _memo_bomb(width: int) -> bytes:
    """Segments, blocks and frames each ``width`` references to one object: width^3 frames in ~7 width bytes."""
    frames = [{"filename": "train.py", "name": "step", "line": 1}] * width
    block = {"address": 1, "size": 1, "state": "active_allocated", "frames": frames}
    segment = {"device": 0, "address": 1, "blocks": [block] * width}
    return pickle.dumps({"segments": [segment] * width, "device_traces": [[]]}, protocol=4)


def test_a_snapshot_that_shares_its_parts_into_a_huge_tree_is_refused(tmp_path: Path) -> None:
    data = _memo_bomb(300)  # 27 million frames described in under 2 KB
    assert len(data) < 2_000
    path = tmp_path / "memory_snapshot_rank0.pickle"
    path.write_bytes(data)
    with pytest.raises(FormatError, match=r"refused: the 1,\d{3}-byte pickle shares its parts so often"):
        load_snapshot(path)
    path.write_bytes(_memo_bomb(20))  # 8,000 frames: within the budget, read as it is
    assert len(load_snapshot(path)["segments"]) == 20


def test_a_snapshot_that_contains_itself_is_refused(tmp_path: Path) -> None:
    snapshot = tiny_snapshot()
    loop: list[object] = []
    loop.append(loop)
    snapshot["kinetoscope"] = {"loop": loop}
    path = tmp_path / "memory_snapshot_rank0.pickle"
    path.write_bytes(pickle.dumps(snapshot, protocol=4))
    with pytest.raises(FormatError, match="contains itself"):
        load_snapshot(path)

"""Conformance: the session's `.pb` files and the Parquet dataset say the same about every event.

Both are sinks of one event model. For every real trace in ``tests/data`` (and every trace of
the public corpus when ``../shared`` is present) the trace is imported into a session and the
session is ingested; then the runtime and device slices of ``ntrace.pb`` / ``device_N.pb`` must
equal the dataset's rows of those layers (layer, name, category, start, duration, device,
stream), the allocator instants must be the same, and the launch flows (runtime call -> device
execution) must join the same events.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import kinetoscope
from kinetoscope.cli import main
from kinetoscope.format.perfetto_packets.event_reader import DecodedEvent, iter_events
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti
from kinetoscope.model import kinds, tracks

from ..conftest import REPO, SHARED

DATA = REPO / "tests" / "data"
CORPUS = SHARED / "datasets" / "public-traces"
# A device execution's key, then its track's name and its lane there (``model.tracks`` names them for
# both sinks; a thread is named by its id, which the `.pb` files know before any thread name); runtime
# rows have device and stream -1 unless they are synchronizations.
Key = tuple[str, str, str, int, int, int, int, str, int]
MEMORY_EVENT = "[memory]"
# Flows the `.pb` files carry as correlation flows: from a call to what it caused.
LAUNCH_KINDS = ("runtime_device", "runtime_sync", "runtime_runtime")


def _traces(root: Path) -> list[Path]:
    found = [p for p in sorted(root.rglob("*")) if p.name.endswith((".json", ".json.gz"))]
    return [p for p in found if p.stat().st_size < 40 << 20]


def _stream_of(track_name: str) -> int:
    head = track_name.split(" · ", maxsplit=1)[0]
    return int(head.removeprefix("stream ")) if head.startswith("stream ") else -1


def _sync_device(track_name: str) -> int:
    head = track_name.split(" · ", maxsplit=1)[0]
    return int(head.removeprefix("device ")) if head.startswith("device ") else -1


def pb_events(session: Path) -> tuple[Counter[Key], Counter[tuple[Key, Key]], Counter[int]]:
    """(slices, launch flows, allocator instants by time) read back from a session's `.pb` files."""
    slices: Counter[Key] = Counter()
    starts: dict[int, Key] = {}
    ends: dict[int, list[Key]] = {}
    instants: Counter[int] = Counter()
    for path in sorted(session.glob("*.pb")):
        device = layout.parse_device_trace_name(path.name)
        if path.name == layout.TRACE_INFO or (device is None and path.name != layout.SYSTEM_TRACE):
            continue
        for event in iter_events(path):
            if event.kind == "instant" and event.name == MEMORY_EVENT:
                instants[event.ts_ns] += 1
            if event.kind != "slice":
                continue
            key = _pb_key(event, device)
            slices[key] += 1
            for flow in event.flow_ids:
                starts[flow] = key
            for flow in event.terminating_flow_ids:
                ends.setdefault(flow, []).append(key)
    flows = Counter((starts[f], end) for f, keys in ends.items() if f in starts for end in keys if starts[f] != end)
    return slices, flows, instants


def _track_and_lane(track_name: str) -> tuple[str, int]:
    """A `.pb` lane track's name (``model.tracks.lane_track_name``) as its track's name and lane."""
    base, found, lane = track_name.rpartition(" · lane ")
    return (base, int(lane) - 1) if found and lane.isdigit() else (track_name, 0)


def _pb_key(event: DecodedEvent, device: int | None) -> Key:
    where = _track_and_lane(event.track.name)
    if device is not None:
        stream = _stream_of(event.track.name)
        return ("device", event.name, event.category, event.ts_ns, event.dur_ns, device, stream, *where)
    sync = _sync_device(event.track.name)
    return ("runtime", event.name, event.category, event.ts_ns, event.dur_ns, sync, -1, *where)


def _model_track(row: dict[str, Any]) -> str:
    """The track the model names for a dataset row, its thread by its id."""
    if row["layer"] == "device":
        return tracks.device_track_name(row["stream"], row["kind"] == kinds.DEVICE_ANNOTATION)
    if row["kind"] == kinds.SYNC:
        return tracks.sync_track_name(row["device"])
    return tracks.thread_track_name(tracks.thread_label(row["tid"]), row["kind"])


def dataset_events(dataset: Path) -> tuple[Counter[Key], Counter[tuple[Key, Key]], Counter[int]]:
    """The same three things from the dataset's ``events`` and ``flows`` tables."""
    opened = kinetoscope.open(dataset)
    events = opened.table("events")
    layer = events.column("layer").cast("string")
    host = events.filter(pc.is_in(layer, value_set=pa.array(["runtime", "device"])))
    columns = ["id", "layer", "name", "category", "ts_ns", "dur_ns", "device", "stream", "kind", "tid", "lane"]
    rows = host.select(columns).to_pylist()
    keys: dict[int, Key] = {}
    slices: Counter[Key] = Counter()
    instants: Counter[int] = Counter()
    for row in rows:
        if row["name"] == MEMORY_EVENT and row["dur_ns"] == 0 and row["layer"] == "runtime":
            instants[row["ts_ns"]] += 1
            continue
        sync = row["kind"] == "sync"
        device = row["device"] if row["layer"] == "device" or sync else -1
        stream = row["stream"] if row["layer"] == "device" else -1
        key = (row["layer"], row["name"], row["category"], row["ts_ns"], row["dur_ns"], device, stream,
               _model_track(row), row["lane"])
        keys[row["id"]] = key
        slices[key] += 1
    flows: Counter[tuple[Key, Key]] = Counter()
    for edge in opened.table("flows").to_pylist():
        if edge["kind"] in LAUNCH_KINDS and edge["src_id"] in keys and edge["dst_id"] in keys:
            flows[(keys[edge["src_id"]], keys[edge["dst_id"]])] += 1
    return slices, flows, instants


def _difference(a: Counter[object], b: Counter[object]) -> list[object]:
    return sorted(((a - b) + (b - a)).elements(), key=repr)[:5]


def _without_lane(slices: Counter[Key]) -> Counter[Any]:
    found: Counter[Any] = Counter()
    for key, count in slices.items():
        found[key[:-1]] += count
    return found


def _flows_without_lane(flows: Counter[tuple[Key, Key]]) -> Counter[Any]:
    found: Counter[Any] = Counter()
    for (src, dst), count in flows.items():
        found[(src[:-1], dst[:-1])] += count
    return found


def check(trace: Path, tmp_path: Path, *, lanes: bool = False) -> None:
    """The `.pb` files and the dataset hold the same slices on tracks of the same names (and, with
    ``lanes``, on the same lanes), the same allocator instants and the same launch flows."""
    sessions, dataset = tmp_path / "sessions", tmp_path / "dataset"
    assert main(["import", str(trace), "--out", str(sessions)]) == 0
    assert main(["ingest", str(sessions), "--out", str(dataset)]) == 0
    (session,) = layout.find_sessions(sessions)
    pb_slices, pb_flows, pb_instants = pb_events(session)
    ds_slices, ds_flows, ds_instants = dataset_events(dataset)
    if not lanes:  # the track's name still counts
        pb_slices, ds_slices = _without_lane(pb_slices), _without_lane(ds_slices)
        pb_flows, ds_flows = _flows_without_lane(pb_flows), _flows_without_lane(ds_flows)
    # The dataset keeps every event; the `.pb` files skip (and count) those wholly outside the profiling window.
    outside = sum(s.count for s in ti.read_trace_info(session).skipped_events if s.reason == "outside_window")
    only_pb = _difference(pb_slices - ds_slices, Counter())
    assert not only_pb, f"{trace.name}: slices only in the .pb files, e.g. {only_pb}"
    assert sum((ds_slices - pb_slices).values()) == outside, f"{trace.name}: slices differ beyond the window"
    assert pb_instants == ds_instants, f"{trace.name}: allocator instants differ"
    assert pb_flows == ds_flows, f"{trace.name}: launch flows differ, e.g. {_difference(pb_flows, ds_flows)}"


@pytest.mark.parametrize("trace", _traces(DATA), ids=lambda p: p.parent.name + "/" + p.name[:24])
def test_pb_files_and_dataset_agree(trace: Path, tmp_path: Path) -> None:
    check(trace, tmp_path)


# Lanes: the `.pb` conversion packs a track's slices in the order the trace lists them (it writes as it
# reads), the dataset in start order, longest first; where a trace lists overlapping slices of one
# track out of start order (device annotations, DLRM's streams), a few slices (1 to 4 per trace here)
# take other lanes: the conversion writes as it reads, so it cannot wait for a slice listed later that
# starts earlier, and the dataset's lanes do not depend on how a trace happens to list its events.
LANES_AGREE = [p for p in _traces(DATA) if p.parent.name in ("import-cuda-multi-stream", "npu-trace-view",
                                                              "ingest-cpu-capture", "import-cpu-gloo")]
LANES_DIFFER = [p for p in _traces(DATA) if p.parent.name == "dlrm_8rank" and p.name.startswith("worker0")]


@pytest.mark.parametrize("trace", LANES_AGREE, ids=lambda p: p.parent.name)
def test_pb_files_and_dataset_agree_on_lanes(trace: Path, tmp_path: Path) -> None:
    check(trace, tmp_path, lanes=True)


@pytest.mark.parametrize("trace", LANES_DIFFER, ids=lambda p: p.parent.name)
def test_where_lanes_differ_each_sink_packs_with_the_model_in_its_own_order(trace: Path, tmp_path: Path) -> None:
    # GIVEN a trace that lists some overlapping slices of a track out of start order, in both sinks
    sessions, dataset = tmp_path / "sessions", tmp_path / "dataset"
    assert main(["import", str(trace), "--out", str(sessions)]) == 0
    assert main(["ingest", str(sessions), "--out", str(dataset)]) == 0
    (session,) = layout.find_sessions(sessions)
    pb_slices, ds_slices = pb_events(session)[0], dataset_events(dataset)[0]
    rows = _host_rows(dataset)
    # THEN the `.pb` lanes are the model's packing in the order the trace lists the slices (the
    # dataset's ids), the dataset's the same packing in start order, longest first: only the order
    # differs, and it does here
    assert pb_slices == _packed(rows, lambda r: r["id"])
    assert ds_slices == _packed(rows, lambda r: (r["ts_ns"], -r["dur_ns"], r["id"]))
    assert pb_slices != ds_slices


def _host_rows(dataset: Path) -> list[dict[str, Any]]:
    events = kinetoscope.open(dataset).table("events")
    host = events.filter(pc.is_in(events.column("layer").cast("string"), value_set=pa.array(["runtime", "device"])))
    columns = ["id", "layer", "name", "category", "ts_ns", "dur_ns", "device", "stream", "kind", "tid"]
    return [r for r in host.select(columns).to_pylist()
            if not (r["name"] == MEMORY_EVENT and r["dur_ns"] == 0 and r["layer"] == "runtime")]


def _packed(rows: list[dict[str, Any]], order: Callable[[dict[str, Any]], Any]) -> Counter[Key]:
    """The slices' keys with the lanes `tracks.Lanes` gives each track's slices taken in ``order``."""
    lanes: dict[str, tracks.Lanes] = {}
    found: Counter[Key] = Counter()
    for row in sorted(rows, key=order):
        track = _model_track(row)
        lane = lanes.setdefault(track, tracks.Lanes()).place(row["ts_ns"], row["ts_ns"] + row["dur_ns"])
        device = row["device"] if row["layer"] == "device" or row["kind"] == "sync" else -1
        stream = row["stream"] if row["layer"] == "device" else -1
        where = (device, stream, track, lane)
        found[(row["layer"], row["name"], row["category"], row["ts_ns"], row["dur_ns"], *where)] += 1
    return found


@pytest.mark.slow
@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"{CORPUS} is not present")
@pytest.mark.parametrize("trace", _traces(CORPUS) if CORPUS.is_dir() else [], ids=lambda p: p.name[:40])
def test_pb_files_and_dataset_agree_on_the_public_corpus(trace: Path, tmp_path: Path) -> None:
    if "not a torch.profiler trace" in _import_refusal(trace, tmp_path):
        pytest.skip("not a torch.profiler trace")
    check(trace, tmp_path / "check")


def _import_refusal(trace: Path, tmp_path: Path) -> str:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        main(["import", str(trace), "--out", str(tmp_path / "probe")])
    return out.getvalue()

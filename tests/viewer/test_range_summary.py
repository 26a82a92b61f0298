"""The viewer's range summary on a dataset ingest wrote: counted by kind, nesting counted once."""

from __future__ import annotations

from pathlib import Path

from kinetoscope.cli import main
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying import queries

from ..ingest.helpers import annotated_step, write_session


def test_annotations_are_not_kernels_and_nested_ops_count_once(tmp_path: Path) -> None:
    # GIVEN a step with a recursive op under a Python frame, one kernel, and a device annotation
    # covering the whole step on the kernel's stream (as gpu_user_annotation rows do)
    events = annotated_step()
    write_session(tmp_path / "profile", events)
    assert main(["ingest", str(tmp_path / "profile"), "--out", str(tmp_path / "ds")]) == 0
    index = ViewerIndex.open(Dataset(tmp_path / "ds"))
    span = int(index.cursor().execute("SELECT value FROM meta WHERE key = 'span_ns'").fetchone()[0])
    tracks = [row[0] for row in index.cursor().execute("SELECT track_id FROM tracks").fetchall()]
    summary = queries.range_summary(index, 0, span, tracks)
    # THEN the device annotation is not device work, and the stream is busy 10 of 100 µs
    assert [(k["name"], k["kind"], k["total_ns"]) for k in summary["top_kernels"]] == [
        ("reduce_kernel", "kernel", 10_000)
    ]
    device_track = index.cursor().execute("SELECT track_id FROM tracks WHERE layer = 'device'").fetchone()[0]
    assert {b["track"]: b["busy_ns"] for b in summary["busy"]}[device_track] == 10_000
    # AND aten::sum inside aten::sum counts 60 µs once, Python frames are no ops
    ops = {o["name"]: o["total_ns"] for o in summary["top_ops"]}
    assert ops == {"aten::sum": 60_000}

"""The ``kernels`` table: each session's kernels/index.json ingested; a damaged one is a warning, never a failure."""

from __future__ import annotations

import json
from pathlib import Path

from kinetoscope.format.problems import ProblemLog
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.ingest.rows.kernels import BAD_KERNEL_INDEX, kernels_table
from kinetoscope.ingest.running.pipeline import IngestOptions, ingest
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying import queries

from ..helpers import kernel, write_session, x

TRITON = "triton_poi_fused_relu_0"
SOURCE = {"file": "/m/model.py", "line": 12, "function": "forward", "code": "return torch.relu(x)"}
INDEX = {
    "format": 2,
    "trace_names": {
        TRITON: [{"kind": "triton", "graph": "fx1", "cache_key": "k1", "in_trace": True,
                  "files": ["kernels/k1/k1.py", "../../../etc/passwd"],
                  "provenance": {"post_grad_nodes": ["relu"], "pre_grad_nodes": ["relu"], "source": [SOURCE]}}],
    },
}


def session_with_index(root: Path, text: str | None) -> Path:
    session = write_session(root, [x("aten::relu", 0, 10, correlation=1), kernel(TRITON, 2, 5, 1)])
    if text is not None:
        (session / layout.KERNELS_DIR).mkdir()
        (session / layout.KERNEL_INDEX).write_text(text)
    return session


def viewer_of(tmp_path: Path) -> ViewerIndex:
    report = ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds"))
    assert report.status == "ok"
    return ViewerIndex.open(Dataset(tmp_path / "ds"))


def details_of(viewer: ViewerIndex, name: str) -> dict[str, object]:
    (event_id,), = viewer.cursor().execute("SELECT id FROM events WHERE name = ?", [name]).fetchall()
    details = queries.event_details(viewer, int(event_id))
    assert details is not None
    return details


def test_a_kernel_event_gets_the_provenance_of_its_sessions_kernel_of_that_name(tmp_path: Path) -> None:
    session_with_index(tmp_path / "prof", json.dumps(INDEX))
    viewer = viewer_of(tmp_path)
    (entry,) = details_of(viewer, TRITON)["provenance"]  # type: ignore[misc]
    assert entry["kind"] == "triton" and entry["graph"] == "fx1"
    assert entry["files"] == ["kernels/k1/k1.py", "../../../etc/passwd"]  # names only, as text: never opened
    assert entry["kernels"] == [{"kernel": TRITON, "post_grad_nodes": ["relu"], "pre_grad_nodes": ["relu"],
                                 "source": [SOURCE]}]
    assert "provenance" not in details_of(viewer, "aten::relu")


def test_a_damaged_index_is_a_warning_and_the_session_is_still_ingested(tmp_path: Path) -> None:
    session_with_index(tmp_path / "prof", '{"format": 2, "trace_names": {"x": [')
    viewer = viewer_of(tmp_path)
    con = viewer.cursor()
    assert con.execute("SELECT count(*) FROM kernels").fetchone() == (0,)
    (severity, file), = con.execute(
        "SELECT severity, file FROM warnings WHERE kind = ?", [BAD_KERNEL_INDEX]).fetchall()
    assert (severity, file) == ("warning", layout.KERNEL_INDEX)
    assert "provenance" not in details_of(viewer, TRITON)


def test_an_index_that_is_no_index_or_not_inside_the_session_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps(INDEX))
    for text in ("[]", '{"format": 99, "trace_names": {}}', '{"format": 2, "trace_names": {"a": [1, "b"]}}'):
        problems = ProblemLog()
        session = session_with_index(tmp_path / f"p{len(list(tmp_path.iterdir()))}", text)
        assert kernels_table("r", 0, "s", session, problems).num_rows == 0
        assert problems.counts() == {BAD_KERNEL_INDEX: 1}, text
    session = session_with_index(tmp_path / "linked", None)
    (session / layout.KERNELS_DIR).mkdir()
    (session / layout.KERNEL_INDEX).symlink_to(outside)
    problems = ProblemLog()
    assert kernels_table("r", 0, "s", session, problems).num_rows == 0
    assert problems.counts() == {BAD_KERNEL_INDEX: 1}
    assert kernels_table("r", 0, "s", session_with_index(tmp_path / "none", None), ProblemLog()).num_rows == 0

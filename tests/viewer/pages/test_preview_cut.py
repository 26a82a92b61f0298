"""The preview's prefix cut (`viewer.pages.preview.cut_prefix`): a whole trace of another's first events."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.importer.trace_import import ImportOptions, import_trace
from kinetoscope.viewer.pages.preview import cut_prefix

from ...conftest import SHARED

DLRM = SHARED / "datasets" / "public-traces" / "param" / "et_replay" / "tests" / "inputs" / "dlrm_kineto"
HEAD = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}],
        "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8}}
TAIL = {"traceName": "rank3.pt.trace.json", "baseTimeUs": 1700000000000000}


def kineto_like(count: int) -> dict[str, Any]:
    """`count` ops in file order, Kineto's process and thread names last, keys before and after the events.
    Some names hold what a byte-level cut could take for an event boundary."""
    events: list[dict[str, Any]] = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm" if i % 7 else 'odd "},{ name ]}', "pid": 1, "tid": 1 + i % 2,
         "ts": 10.0 * i, "dur": 4.5, "args": {"External id": i}}
        for i in range(count)]
    events += [{"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}},
               {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}},
               {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "backward"}}]
    return {**HEAD, "traceEvents": events, **TAIL}


def write(path: Path, trace: dict[str, Any]) -> Path:
    text = json.dumps(trace, indent=2)  # Kineto writes each event over several lines
    if path.name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def test_a_cut_keeps_the_first_events_in_order_the_top_level_keys_and_the_names(tmp_path: Path) -> None:
    trace = kineto_like(20_000)
    source = write(tmp_path / "rank3.pt.trace.json", trace)
    cut = cut_prefix(source, tmp_path / "cut.json", budget_bytes=source.stat().st_size // 10)
    written = json.loads(cut.path.read_text())
    ops = written["traceEvents"][: cut.events]
    assert 0 < cut.events < 20_000 and not cut.complete
    assert ops == trace["traceEvents"][: cut.events]  # the first events, whole and in order
    assert written["traceEvents"][cut.events :] == trace["traceEvents"][-3:]  # the names, from the tail
    assert cut.names == 3
    assert {k: v for k, v in written.items() if k != "traceEvents"} == {**HEAD, **TAIL}
    assert cut.source_bytes == source.stat().st_size


def test_a_budget_over_the_trace_copies_every_event(tmp_path: Path) -> None:
    trace = kineto_like(500)
    source = write(tmp_path / "rank3.pt.trace.json", trace)
    cut = cut_prefix(source, tmp_path / "cut.json", budget_bytes=10 << 20)
    assert cut.complete and cut.names == 0
    assert json.loads(cut.path.read_text())["traceEvents"] == trace["traceEvents"]


def test_a_compressed_trace_is_cut_from_its_head_alone(tmp_path: Path) -> None:
    """Reading a gzip file's tail means inflating all of it: the cut keeps the keys before the events."""
    trace = kineto_like(20_000)
    source = write(tmp_path / "rank3.pt.trace.json.gz", trace)
    cut = cut_prefix(source, tmp_path / "cut.json", budget_bytes=200_000)
    written = json.loads(cut.path.read_text())
    assert 0 < cut.events < 20_000 and cut.names == 0
    assert written["traceEvents"] == trace["traceEvents"][: cut.events]
    assert {k: v for k, v in written.items() if k != "traceEvents"} == HEAD


def test_the_cut_imports_without_problems_and_keeps_the_rank(tmp_path: Path) -> None:
    source = write(tmp_path / "rank3.pt.trace.json", kineto_like(20_000))
    (tmp_path / "cut").mkdir()
    cut = cut_prefix(source, tmp_path / "cut" / "rank3.pt.trace.json", budget_bytes=300_000)
    result = import_trace(cut.path, ImportOptions(out_dir=tmp_path / "sessions"))
    assert result.problems.summary_lines() == []
    assert result.identity is not None and result.identity.rank == 3


@pytest.mark.skipif(not DLRM.is_dir(), reason=f"{DLRM} not found (the public trace corpus)")
def test_a_real_trace_keeps_its_thread_names_and_rank(tmp_path: Path) -> None:
    """A DLRM rank from torch.profiler: its framework ops come first, its 42 name events last."""
    source = Path(shutil.copy(DLRM / "worker0_step_12.1694128201545.pt.trace.json", tmp_path))
    original = json.loads(source.read_text())
    cut = cut_prefix(source, tmp_path / "cut.json", budget_bytes=100_000)
    written = json.loads(cut.path.read_text())
    names = [e for e in original["traceEvents"] if e.get("ph") == "M"]
    assert written["traceEvents"][: cut.events] == original["traceEvents"][: cut.events]
    assert written["traceEvents"][cut.events :] == names and len(names) == 42
    assert written["distributedInfo"] == {"backend": "nccl", "rank": 0, "world_size": 8}
    result = import_trace(cut.path, ImportOptions(out_dir=tmp_path / "sessions"))
    assert result.problems.summary_lines() == []


@pytest.mark.skipif(not DLRM.is_dir(), reason=f"{DLRM} not found (the public trace corpus)")
def test_the_preview_of_a_real_trace_is_a_dataset_of_its_first_ops(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """What `kinetoscope view`'s child process builds, in this process: cut, import, ingest, index."""
    from kinetoscope.cli.view_preview import build, preview_about
    from kinetoscope.query.dataset import Dataset
    from kinetoscope.viewer.indexing.index import ViewerIndex

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    source = Path(shutil.copy(DLRM / "worker3_step_12.1694128201557.pt.trace.json", tmp_path))
    (tmp_path / "preview").mkdir()
    built = build(source, tmp_path / "preview", 150_000)
    assert not built["complete"] and Path(built["dataset"]).is_relative_to(tmp_path / "preview")
    index = ViewerIndex.open(Dataset(Path(built["dataset"])))
    try:
        about = preview_about(index, built)
        kinds = dict(index.cursor().execute(
            "SELECT k.kind, count(*) FROM ev JOIN kinds k ON k.kind_id = ev.kind GROUP BY ALL").fetchall())
    finally:
        index.close()
    assert about["ranks"] == [3] and about["trace"] == source.name and about["trace_bytes"] == source.stat().st_size
    assert 0 < about["events"] <= built["events_kept"]
    assert kinds.get("op", 0) > 0 and not {"kernel", "runtime", "memcpy"} & set(kinds)  # first come host ops

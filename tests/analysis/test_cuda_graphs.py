"""CUDA graph replays: on a tiny trace built here, and on the public traces that replay graphs,
against counts taken straight from their JSON."""

from __future__ import annotations

import gzip
import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from kinetoscope.analysis import ANALYSES_BY_NAME, needed_columns
from kinetoscope.importer.trace_import import ImportOptions, import_trace
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.query import open_dataset

from ..conftest import SHARED
from .test_analyses import events

CORPUS = SHARED / "datasets" / "public-traces" / "hta" / "tests" / "data"
REPLAYS = ANALYSES_BY_NAME["cuda_graph_replays"]


def _built(with_capture: bool) -> dict:
    runtime = {"category": "cuda_runtime", "layer": "runtime"}
    kernel = {"category": "kernel", "layer": "device", "device": 0, "tid": 7}
    rows = [
        {"name": "CompiledFunction", "ts_ns": 0, "dur_ns": 1_000},  # 0
        {**runtime, "name": "cudaGraphLaunch", "ts_ns": 10, "dur_ns": 20, "parent_id": 0, "correlation": 5},  # 1
        {**kernel, "name": "triton_poi_fused_add_0", "ts_ns": 100, "dur_ns": 300, "op_id": 0, "launch_id": 1},
        {**kernel, "name": "triton_red_fused_sum_1", "ts_ns": 400, "dur_ns": 200, "op_id": 0, "launch_id": 1},
        {"name": "aten::mm", "ts_ns": 2_000, "dur_ns": 100},  # 4
        {**runtime, "name": "cudaLaunchKernel", "ts_ns": 2_010, "dur_ns": 5, "parent_id": 4, "correlation": 6},  # 5
        {**kernel, "name": "sgemm", "ts_ns": 2_100, "dur_ns": 500, "op_id": 4, "launch_id": 5},
    ]
    if with_capture:
        rows.append({**runtime, "name": "cudaStreamBeginCapture", "ts_ns": 3_000, "dur_ns": 5})
    return {"events": events(rows)}


def test_replayed_work_is_counted_under_the_op_around_the_graph_launch() -> None:
    (row,) = REPLAYS(_built(with_capture=False)).to_pylist()
    assert (row["op"], row["graph_launches"], row["kernels"], row["gpu_ns"]) == ("CompiledFunction", 1, 2, 500)
    assert row["pct_of_busy"] == 50.0 and row["capture_in_trace"] is False  # 500 of 1000 ns busy
    assert REPLAYS(_built(with_capture=True)).to_pylist()[0]["capture_in_trace"] is True


def test_no_graph_no_rows() -> None:
    no_graph = {"events": _built(with_capture=False)["events"].slice(4)}
    assert REPLAYS(no_graph).num_rows == 0


def _from_json(path: Path) -> dict[str, tuple[int, int, int]]:
    """(graph launches, replayed device rows, their ns) per innermost cpu_op around each launch."""
    with gzip.open(path, "rt") as handle:
        trace = json.load(handle)["traceEvents"]
    launches = [e for e in trace if e.get("name") == "cudaGraphLaunch"]
    ops = [e for e in trace if e.get("cat") == "cpu_op"]
    op_of = {}
    for call in launches:
        around = [o for o in ops if o["tid"] == call["tid"] and o["ts"] <= call["ts"] <= o["ts"] + o["dur"]]
        op_of[call["args"]["correlation"]] = max(around, key=lambda o: o["ts"])["name"]
    count: Counter[str] = Counter(op_of.values())
    kernels: Counter[str] = Counter()
    dur_us: Counter[str] = Counter()
    for work in trace:
        if work.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and work["args"].get("correlation") in op_of:
            kernels[op_of[work["args"]["correlation"]]] += 1
            dur_us[op_of[work["args"]["correlation"]]] += work["dur"]
    return {op: (count[op], kernels[op], round(dur_us[op] * 1000)) for op in count}


@pytest.mark.parametrize("trace", ["negative_queue_length_values_check/rank0.json.gz", "trace_diff/test/test.json.gz"])
def test_public_graph_replays_match_the_json(tmp_path: Path, trace: str) -> None:
    if not (CORPUS / trace).exists():
        pytest.skip("public trace corpus not present")
    local = tmp_path / Path(trace).name
    shutil.copy(CORPUS / trace, local)
    import_trace(local, ImportOptions(out_dir=tmp_path / "prof"))
    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")).status in ("ok", "partial")
    with open_dataset(tmp_path / "ds") as ds:
        found = REPLAYS(ds.load(needed_columns((REPLAYS,)))).to_pylist()
    expected = _from_json(local)
    assert {r["op"]: (r["graph_launches"], r["kernels"], r["gpu_ns"]) for r in found} == expected
    assert all(r["capture_in_trace"] is False for r in found)  # both were captured before the window

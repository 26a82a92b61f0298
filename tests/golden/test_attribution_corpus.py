"""The roll-ups on public GPU traces with shapes (HTA's test data, when ``../shared`` holds the
corpus): device time is conserved, and layer norm, softmax and the matrix products get a cost."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinetoscope.analysis import ANALYSES_BY_NAME, TopOptions, needed_columns
from kinetoscope.importer.trace_import import ImportOptions, import_trace
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from ..conftest import SHARED

CORPUS = SHARED / "datasets" / "public-traces" / "hta" / "tests" / "data"
TRACES = ("trace_filter/sampled_rank-0.json.gz", "negative_queue_length_values_check/rank0.json.gz")
NAMES = ("gpu_time_by_op", "gpu_time_by_top_op", "time_by_category", "op_roofline")


@pytest.mark.parametrize("trace", TRACES)
def test_public_trace(tmp_path: Path, trace: str) -> None:
    path = CORPUS / trace
    if not path.exists():
        pytest.skip("public trace corpus not present")
    import_trace(path, ImportOptions(out_dir=tmp_path / "prof"))
    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")).status in ("ok", "partial")
    with open_dataset(tmp_path / "ds") as ds:
        tables = ds.load(needed_columns(tuple(ANALYSES_BY_NAME[n] for n in NAMES)))
        total_ns = ds.sql("SELECT sum(dur_ns)::BIGINT AS ns FROM events WHERE kind IN ('kernel', 'memcpy', 'memset')")
    expected_ns = total_ns.to_pylist()[0]["ns"]
    every_row = (TopOptions(top=100_000),)
    for analysis in (ANALYSES_BY_NAME[name] for name in NAMES[:3]):
        found = analysis(tables, analysis.pick(every_row)).to_pylist()
        assert sum(r["gpu_ns"] for r in found) == expected_ns, analysis.name
    costed = {r["op"] for r in ANALYSES_BY_NAME["op_roofline"](tables, *every_row).to_pylist() if r["flops"]}
    assert {"aten::mm", "aten::addmm", "aten::linear", "aten::add_", "aten::mul"} <= costed
    if trace.startswith("trace_filter"):
        assert {"aten::layer_norm", "aten::softmax", "aten::bmm", "aten::matmul"} <= costed

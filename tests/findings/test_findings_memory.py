"""What the findings hold per event while every rule runs: the peak of the numpy and Python memory
(``tracemalloc``) over a dataset whose host ops have long names and run while the device is idle,
the case where a rule that names the host's work (``gpu_idle_host_bound``'s ``host_during_gaps``)
made a fixed-width string array of every row it named."""

from __future__ import annotations

import contextlib
import io
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.analysis import prepared
from kinetoscope.cli import main
from kinetoscope.findings import NEEDED_COLUMNS, run_rules
from kinetoscope.query import Dataset

BLOCKS = 4_000  # of 5 events: 20,000 events
NAME_CHARS = 200


def _block(i: int) -> list[dict[str, Any]]:
    """A host op of 100 µs with a long name, its launch at its end, and a kernel of 2 µs after it:
    the device idles while the host works (a gap of about 100 µs before each kernel)."""
    ts = 1000 + 200 * i
    op = f"{'aten::a_long_host_op_name_' * (NAME_CHARS // 26)}{i % 7}"
    return [
        {"ph": "X", "cat": "cpu_op", "name": op, "pid": 1, "tid": 1, "ts": ts, "dur": 100},
        {"ph": "X", "cat": "cpu_op", "name": f"aten::small{i % 3}", "pid": 1, "tid": 2, "ts": ts, "dur": 10},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts + 100, "dur": 5,
         "args": {"correlation": i}},
        {"ph": "X", "cat": "kernel", "name": f"k{i % 5}", "pid": 0, "tid": 7, "ts": ts + 110, "dur": 2,
         "args": {"correlation": i, "device": 0, "stream": 7}},
        {"ph": "X", "cat": "cpu_op", "name": "aten::tail", "pid": 1, "tid": 3, "ts": ts + 150, "dur": 20},
    ]  # fmt: skip


@pytest.fixture(scope="module")
def long_named(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dataset of ``5 * BLOCKS`` events of one rank, imported and ingested."""
    folder = tmp_path_factory.mktemp("long_named")
    head = {"schemaVersion": 1, "distributedInfo": {"rank": 0, "world_size": 1}, "baseTimeNanoseconds": 17 * 10**17}
    events = [event for i in range(BLOCKS) for event in _block(i)]
    (folder / "trace.json").write_text(json.dumps({**head, "traceEvents": events}))
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["import", str(folder / "trace.json"), "--out", str(folder / "profile"), "--no-pb"]) == 0
        assert main(["ingest", str(folder / "profile"), "--out", str(folder / "dataset"), "--quiet"]) == 0
    return folder / "dataset"


@pytest.mark.serial  # tracemalloc counts every thread of the process
def test_the_findings_hold_under_150_bytes_per_event_where_the_host_ops_have_long_names(long_named: Path) -> None:
    # GIVEN the findings' tables of a dataset of long-named host ops in the device's idle gaps
    tables = prepared({name: Dataset(long_named).table(name, columns) for name, columns in NEEDED_COLUMNS.items()})
    events = tables["events"].num_rows
    run_rules(tables)  # the modules and their caches made before counting
    # WHEN every rule runs over them
    tracemalloc.start()
    try:
        found = run_rules(tables)
        peak_bytes = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # THEN the rule that names the host's work found it, and the peak stays under 150 bytes per event
    # (78; 1,826 while the names a rule reports were grouped as a fixed-width string array of every
    # row named: 4 bytes a character of the longest name, copied twice more to sort it)
    idle = [finding for finding in found if finding.rule == "gpu_idle_host_bound"]
    doing = [top["name"] for top in idle[0].seen["host_during_gaps"]] if idle else []
    assert any(name.startswith("aten::a_long_host_op_name_") for name in doing)
    assert peak_bytes < 150 * events

"""What a summary holds per event: the peak of the numpy and Python memory (``tracemalloc``) and of
Arrow's (a proxy of its memory pool) while every analysis and rule runs over a dataset of tiny
events, the case where the per-event cost is all there is (``benchmarks/memory_bounds.py``)."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from kinetoscope.cli import main
from kinetoscope.query import Dataset
from kinetoscope.report import prefetch, rank_by_rank
from kinetoscope.report.prefetch import COLUMNS, NARROWED
from kinetoscope.report.runner import AT_ONCE, made
from kinetoscope.report.settings import ReportOptions

from ..arrow_pools import arrow_counted

EVENTS = 50_000


def _event(i: int) -> dict[str, Any]:
    """Host ops on four threads; every tenth event a runtime launch, and its kernel."""
    ts = 1000 + i
    if i % 10 == 8:
        return {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": ts, "dur": 1,
                "args": {"correlation": i}}  # fmt: skip
    if i % 10 == 9:
        return {"ph": "X", "cat": "kernel", "name": f"k{i % 7}", "pid": 0, "tid": 7, "ts": ts, "dur": 1,
                "args": {"correlation": i - 1, "device": 0, "stream": 7}}  # fmt: skip
    return {"ph": "X", "cat": "cpu_op", "name": f"op{i % 13}", "pid": 1, "tid": 1 + i % 4, "ts": ts, "dur": 1}


def _tiny_dataset(folder: Path, events: int, rank: int = 0, first_dur_us: int = 1, ranks: int = 1) -> Path:
    """A dataset of ``events`` tiny events of each of ``ranks`` ranks from ``rank`` on (their event ids:
    ``rank << 40`` and up), imported and ingested; rank ``rank``'s first op lasts ``first_dur_us``."""
    for at in range(rank, rank + ranks):
        head = {"schemaVersion": 1, "distributedInfo": {"rank": at, "world_size": rank + ranks},
                "baseTimeNanoseconds": 17 * 10**17}  # fmt: skip
        trace = [_event(i) for i in range(events)]
        trace[0]["dur"] = first_dur_us if at == rank else 1
        (folder / f"tiny-{at}.json").write_text(json.dumps({**head, "traceEvents": trace}))
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            out = ["--out", str(folder / "profile" / f"rank{at}"), "--no-pb"]
            assert main(["import", str(folder / f"tiny-{at}.json"), *out]) == 0
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["ingest", str(folder / "profile"), "--out", str(folder / "dataset"), "--quiet"]) == 0
    return folder / "dataset"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A dataset of ``EVENTS`` tiny events of one rank, imported and ingested."""
    return _tiny_dataset(tmp_path_factory.mktemp("tiny"), EVENTS)


@pytest.mark.slow
@pytest.mark.serial  # the pool counts every thread of the process: none of another test may run
def test_a_summary_holds_under_60_numpy_and_115_arrow_bytes_per_tiny_event(tiny: Path) -> None:
    # GIVEN a dataset of tiny events, summarised once (the modules and their caches made before counting)
    dataset = Dataset(tiny)
    made(dataset, ReportOptions(threads=1), way=AT_ONCE)
    # WHEN every analysis and rule runs over it, on one thread
    with arrow_counted() as pool:
        tracemalloc.start()
        try:
            report = made(dataset, ReportOptions(threads=1), way=AT_ONCE)
            numpy_peak_bytes = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        found = len(report.results)
        del report  # its tables go before the pool that counted them
        arrow_peak_bytes = pool.max_memory()
    # THEN the numpy and Python memory peaks under 60 bytes per event (57; 69 while top_ops held every
    # row's self time and its keys in 64 bits, and the roofline counted kernels it did not read; 105
    # while the masks found were kept a byte per row, op_up in 64 bits, the ids looked up through
    # three arrays and the name codes copied to int64), and
    # Arrow's (the columns as read, then the prepared table: 104; 119 while the durations, self
    # times, ranks, devices, depths and steps were read in full width where they fit half and the
    # three shape columns of nulls held one each; 162 while the ids, threads and streams were read in
    # 64 bits where they fit 32, 194 while every column was read at once and the dictionary columns
    # copied into one chunk after) under 115
    assert found > 20
    assert numpy_peak_bytes < 60 * EVENTS
    assert arrow_peak_bytes < 115 * EVENTS


def _values(report: Any) -> tuple[dict[str, Any], list[Any]]:
    tables = {name: table.to_pylist() for name, table in report.results.items()}
    return tables, [json.dumps(dataclasses.asdict(f), sort_keys=True, default=str) for f in report.found or ()]


@pytest.mark.parametrize(("rank", "id_type"), [(0, pa.int32()), (1, pa.int64())])
def test_ids_past_32_bits_stay_in_64_and_the_summary_is_the_one_read_in_64(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rank: int, id_type: pa.DataType
) -> None:
    # GIVEN tiny events of rank 0 (ids 0 and up: they fit 32 bits) or of rank 1 (ids 2**40 and up: they do not)
    dataset = Dataset(_tiny_dataset(tmp_path, 2_000, rank))
    # WHEN the summary reads the id, thread and stream columns narrowed where they fit, and all in 64 bits
    read = dataset.load({"events": COLUMNS["events"]}, narrowed=NARROWED)["events"]
    narrowed = _values(made(dataset, ReportOptions(threads=1), way=AT_ONCE))
    monkeypatch.setattr(prefetch, "NARROWED", {})
    wide = _values(made(dataset, ReportOptions(threads=1), way=AT_ONCE))
    # THEN the ids keep 64 bits where they do not fit (the threads and streams fit: 32), and every
    # table and finding is the same
    assert read.schema.field("id").type == id_type and read.schema.field("launch_id").type == id_type
    assert read.schema.field("tid").type == pa.int32() and read.schema.field("stream").type == pa.int32()
    assert narrowed[0] == wide[0] and narrowed[1] == wide[1]


@pytest.mark.parametrize(("first_dur_us", "dur_type"), [(1, pa.int32()), (3_000_000, pa.int64())])
def test_durations_past_32_bits_stay_in_64_and_the_summary_is_the_one_read_in_64(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first_dur_us: int, dur_type: pa.DataType
) -> None:
    # GIVEN tiny events of two ranks, each rank's part holding durations under 2.1 s, or the first
    # rank's first op lasting 3 s (3e9 ns: past 32 bits) next to the other rank's part that fits
    dataset = Dataset(_tiny_dataset(tmp_path, 2_000, first_dur_us=first_dur_us, ranks=2))
    # WHEN the summary reads the durations and self times narrowed where they fit, and all in 64 bits,
    # every rank at once and rank by rank
    read = dataset.load({"events": COLUMNS["events"]}, narrowed=NARROWED)["events"]
    ways = (ReportOptions(threads=1, by_rank=False), ReportOptions(threads=1, by_rank=True))
    narrowed = [_values(made(dataset, options)) for options in ways]
    monkeypatch.setattr(prefetch, "NARROWED", {})
    monkeypatch.setattr(rank_by_rank, "NARROWED", {})
    wide = [_values(made(dataset, options)) for options in ways]
    # THEN the durations and self times keep 64 bits where a part's do not fit (each rank's alone:
    # its own), and every table and finding is the same whichever way it was read
    assert read.schema.field("dur_ns").type == dur_type and read.schema.field("self_ns").type == dur_type
    second = dataset.load({"events": ["dur_ns", "self_ns"]}, rank=1, narrowed=NARROWED)["events"]
    assert second.schema.field("dur_ns").type == pa.int32()
    assert narrowed == wide
    assert narrowed[0] == narrowed[1]

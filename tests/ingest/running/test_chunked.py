"""One trace read by worker processes (``ingest.running.chunked``) gives the dataset one process gives:
the golden digests of real traces, traces built here (many spans, many batches, every kind of
side record), a public trace, and damaged traces, whose warnings must also be the same."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.format.kineto import kineto_json
from kinetoscope.importer.trace_import import ImportOptions, import_trace
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.ingest.running import chunked

from ..digest import dataset_digest, differences
from ..helpers import DATA, import_scenario, kernel, write_session, x
from ..test_golden_digests import CORPUS, GOLDEN, PUBLIC, SCENARIOS

SMALL_CHUNK_BYTES = 4 << 10  # many spans per batch, and batches cut across spans


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts of parallel reads and of those that fell back to the serial path."""
    if not chunked.parallel_possible():
        pytest.skip("no fork, or no msgspec: the parallel path cannot run here")
    found = {"parallel": 0, "refused": 0, "failed": 0}
    read = chunked._read_parallel

    def counted(*args: Any, **kwargs: Any) -> Any:
        found["parallel"] += 1
        try:
            return read(*args, **kwargs)
        except chunked._RefusedError:
            found["refused"] += 1
            raise
        except Exception:
            found["failed"] += 1  # a failed batch, a lost worker
            raise

    monkeypatch.setattr(chunked, "_read_parallel", counted)
    monkeypatch.setattr(kineto_json, "CHUNK_BYTES", SMALL_CHUNK_BYTES)
    return found


def _digest(profile: Path, out: Path, jobs: int, **options: Any) -> dict[str, Any]:
    report = ingest(IngestOptions(profile_dir=profile, out=out, jobs=jobs, trace_split_bytes=0, **options))
    assert report.status in ("ok", "partial"), report.status
    return dataset_digest(out)


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_golden_fixtures_read_in_parallel(tmp_path: Path, scenario: str, calls: dict[str, int]) -> None:
    import_scenario(scenario, tmp_path / "prof")
    expected = json.loads(GOLDEN.read_text())[scenario]
    assert differences(_digest(tmp_path / "prof", tmp_path / "ds", 2), expected) == []
    traces = len(list((DATA / scenario).glob("*.json*")))
    # several sessions are read one per worker process instead, each by its worker alone
    assert calls["parallel"] == (1 if traces == 1 else 0) and calls["refused"] == 0


@pytest.mark.parametrize("trace", PUBLIC)
def test_golden_public_traces_read_in_parallel(tmp_path: Path, trace: str, calls: dict[str, int]) -> None:
    if not (CORPUS / trace).exists():
        pytest.skip("public trace corpus not present")
    import_trace(CORPUS / trace, ImportOptions(out_dir=tmp_path / "prof"))
    expected = json.loads(GOLDEN.read_text())[trace]
    assert differences(_digest(tmp_path / "prof", tmp_path / "ds", 3), expected) == []
    assert calls["parallel"] == 1 and calls["refused"] == 0


def _events(steps: int) -> list[dict[str, Any]]:
    """Steps of ops, launches, kernels, flows, allocator instants, counters and thread names, with
    unknown categories first met in different batches, negative durations and unreadable times."""
    events: list[dict[str, Any]] = [{"ph": "M", "name": "thread_name", "pid": 4242, "tid": 1, "args": {"name": "main"}}]
    for step in range(steps):
        t = step * 100.0
        events += [
            x(f"ProfilerStep#{step}", t, 90, cat="user_annotation"),
            x("train.py(10): step", t + 1, 80, cat="python_function"),
            x("aten::mm", t + 2, 40, **{"External id": step, "Call stack": "a.py(1): f;b.py(2): g"}),
            x("cudaLaunchKernel", t + 3, 5, cat="cuda_runtime", correlation=step),
            kernel("ncclDevKernel_AllReduce_Sum_f32", t + 10, 20, correlation=step),
            {"ph": "s", "id": step, "cat": "ac2g", "name": "flow", "pid": 4242, "tid": 1, "ts": t + 3},
            {"ph": "f", "id": step, "cat": "ac2g", "name": "flow", "pid": 0, "tid": 7, "ts": t + 10, "bp": "e"},
            {"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "pid": 4242, "tid": 1, "ts": t + 4, "s": "t",
             "args": {"Addr": 1000 + step, "Bytes": 64, "Total Allocated": 64 * step, "Total Reserved": 4096,
                      "Device Id": 0, "Device Type": 1}},
            {"ph": "C", "name": "Memory", "pid": 4242, "ts": t + 5, "args": {"used": step}},
        ]
        if step % 37 == 0:
            events.append(x(f"odd{step}", t + 6, 1, cat=f"weird_{step % 5}"))
        if step % 53 == 0:
            events.append(x("negative", t + 7, -3))
        if step % 61 == 0:
            events.append({**x("bad time", 0, 1), "ts": "soon"})
    return events


def _session(root: Path, steps: int = 400) -> Path:
    write_session(root, _events(steps))
    return root


def _same_both_ways(tmp_path: Path, profile: Path, calls: dict[str, int], **options: Any) -> dict[str, Any]:
    serial = _digest(profile, tmp_path / "serial", 1, batch_size=97, **options)
    parallel = _digest(profile, tmp_path / "parallel", 2, batch_size=97, **options)
    assert calls["parallel"] == 1
    assert serial["events"][0]["rows"] > 1000
    assert differences(parallel, serial) == []
    return serial


def test_a_built_trace_reads_the_same_in_parallel(tmp_path: Path, calls: dict[str, int]) -> None:
    found = _same_both_ways(tmp_path, _session(tmp_path / "prof"), calls)
    assert calls["refused"] == 0
    assert found["warnings"][0]["rows"] >= 3  # unknown categories (once each), negative durations, bad times
    assert found["counters"] and found["flows"]


def test_unknown_categories_are_reported_once_per_trace(tmp_path: Path, calls: dict[str, int]) -> None:
    import pyarrow.parquet as pq

    _digest(_session(tmp_path / "prof"), tmp_path / "ds", 2, batch_size=97)
    warnings = pq.read_table(next((tmp_path / "ds" / "warnings").rglob("*.parquet"))).to_pylist()
    unknown = [w["message"] for w in warnings if w["kind"] == "unknown_category"]
    assert sorted(unknown) == sorted({f"unknown category 'weird_{k}': kept as a framework marker" for k in range(5)})


def _damaged(tmp_path: Path, damage: Any) -> Path:
    profile = _session(tmp_path / "prof")
    trace = next(profile.rglob("trace.json"))
    trace.write_bytes(damage(trace.read_bytes()))
    return profile


def _kinds(tmp_path: Path) -> set[str]:
    import pyarrow.parquet as pq

    return {w["kind"] for w in pq.read_table(next((tmp_path / "serial" / "warnings").rglob("*.parquet"))).to_pylist()}


DAMAGES = {
    "garbage in a span": (lambda text: text.replace(b'"aten::mm"', b'"aten::mm" garbage', 3), "malformed_json"),
    "truncated": (lambda text: text[: len(text) * 7 // 10], "truncated"),
    "values that are not objects": (lambda text: text.replace(b'}, {"ph": "C"', b'}, 42, "x", {"ph": "C"', 5),
                                    "not_an_object"),
    "invalid UTF-8": (lambda text: text.replace(b"odd37", b"odd\xff\xfe", 1), "invalid_utf8"),
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_damaged_traces_give_the_same_rows_and_warnings(tmp_path: Path, damage: str, calls: dict[str, int]) -> None:
    edit, kind = DAMAGES[damage]
    _same_both_ways(tmp_path, _damaged(tmp_path, edit), calls)
    assert kind in _kinds(tmp_path)
    # values that are not objects pass the texts' decode, not the records': read again serially
    assert calls["refused"] == (kind == "not_an_object")


@pytest.mark.parametrize("spool_bytes", [8 << 20, 1])
def test_a_number_beyond_float64_sends_the_trace_to_the_serial_path(
    tmp_path: Path, calls: dict[str, int], spool_bytes: int
) -> None:
    """The texts of such a span decode, the records do not: the trace is read again serially,
    its rows spooled again (from a new spill file, when the rows had spilled)."""
    profile = _damaged(tmp_path, lambda text: text.replace(b'"dur": 90', b'"dur": 1e400', 1))
    _same_both_ways(tmp_path, profile, calls, spool_bytes=spool_bytes)
    assert calls["refused"] == 1
    assert not list((tmp_path / "parallel").rglob("*.spool"))


def test_small_traces_and_one_job_stay_in_one_process(tmp_path: Path) -> None:
    trace = next(_session(tmp_path / "prof", steps=5).rglob("trace.json"))
    assert chunked.trace_workers(trace, jobs=4) == 1  # below PARALLEL_TRACE_MIN_BYTES
    assert chunked.trace_workers(trace, jobs=1, min_bytes=0) == 1
    expected = 3 if chunked.parallel_possible() else 1
    assert chunked.trace_workers(trace, jobs=3, min_bytes=0) == expected


def test_the_default_takes_one_worker_per_idle_cpu_but_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    from kinetoscope.ingest.running import pipeline

    options = IngestOptions(profile_dir="p", out="o")
    monkeypatch.setattr(pipeline.os, "cpu_count", lambda: 16)
    for load, workers in ((0.2, chunked.MAX_TRACE_WORKERS), (12.4, 3), (13.0, 2), (13.6, 1), (40.0, 1)):
        monkeypatch.setattr(pipeline.os, "getloadavg", lambda load=load: (load, 0.0, 0.0))
        assert pipeline._trace_jobs(options) == workers, load
    monkeypatch.setattr(pipeline.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(pipeline.os, "getloadavg", lambda: (0.0, 0.0, 0.0))
    assert pipeline._trace_jobs(options) == 1  # one worker beside this process gains nothing
    assert pipeline._trace_jobs(IngestOptions(profile_dir="p", out="o", jobs=6)) == 6


def test_a_batch_that_fails_fails_the_session_as_in_one_process(
    tmp_path: Path, calls: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kinetoscope.ingest.rows import columns, trace_events

    def fails_late(batch: Any, *args: Any) -> Any:
        if batch and batch[0][0] >= 1500:
            raise ValueError("cannot turn this batch into columns")
        return columns.columnize(batch, *args)

    monkeypatch.setattr(chunked, "columnize", fails_late)
    monkeypatch.setattr(trace_events, "columnize", fails_late)
    profile = _session(tmp_path / "prof")
    reports = {}
    for jobs in (1, 2):
        out = tmp_path / f"jobs{jobs}"
        report = ingest(IngestOptions(profile_dir=profile, out=out, jobs=jobs, trace_split_bytes=0, batch_size=97))
        reports[jobs] = ([(o.status, o.message) for o in report.outcomes], dataset_digest(out)["warnings"])
    assert reports[1][0] == [("failed", "cannot turn this batch into columns")]
    assert reports[2] == reports[1]
    assert calls["parallel"] == 1


def _dies_at_a_late_batch(array_text: bytes, index: Any, *args: Any) -> Any:
    """A worker lost mid-trace (killed, out of memory): its process ends without a word."""
    import os

    if len(index) and int(index[0]) >= 1500:
        os._exit(17)
    return _columnize_texts(array_text, index, *args)


_columnize_texts = chunked._columnize_texts


def test_a_lost_worker_sends_the_trace_to_the_serial_path(
    tmp_path: Path, calls: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pool breaks (``BrokenProcessPool``) when a worker dies; the trace is read again in this
    process, into the dataset one process gives, and the session is not failed."""
    monkeypatch.setattr(chunked, "_columnize_texts", _dies_at_a_late_batch)
    profile = _session(tmp_path / "prof")
    reports, digests = [], []
    for jobs in (1, 2):
        out = tmp_path / f"jobs{jobs}"
        report = ingest(IngestOptions(profile_dir=profile, out=out, jobs=jobs, trace_split_bytes=0, batch_size=97))
        reports.append([(o.status, o.message) for o in report.outcomes])
        digests.append(dataset_digest(out))
    assert calls == {"parallel": 1, "refused": 0, "failed": 1}  # the worker died: the pool broke
    assert reports[1] == reports[0] and reports[0][0][0] in ("ok", "partial")  # partial: the trace's own damage
    assert digests[0]["events"][0]["rows"] > 1000
    assert differences(digests[1], digests[0]) == []


def test_the_bytes_read_do_not_go_back_when_the_trace_is_read_again(
    tmp_path: Path, calls: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The serial read after a lost worker starts the file again: the progress holds its furthest."""
    from kinetoscope.format.session_files import session_dir as layout

    monkeypatch.setattr(chunked, "_columnize_texts", _dies_at_a_late_batch)
    profile = _session(tmp_path / "prof")
    (session,) = layout.find_sessions(profile)
    read: list[int] = []
    options = IngestOptions(profile_dir=profile, out=tmp_path / "ds", jobs=2, trace_split_bytes=0, batch_size=97)
    ingest(options, None, lambda name, done, size: read.append(done))
    assert calls["failed"] == 1 and len(read) > 2
    assert read == sorted(read) and read[-1] == (session / layout.TRACE_JSON).stat().st_size


def test_a_trace_naming_a_device_process_is_read_in_order(
    tmp_path: Path, calls: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch_npu's device tasks are placed by their process's name, read before them (state across
    batches, ``model.device_processes``): a worker's batch that names such a process sends the trace
    to the serial path, which gives the same rows, the tasks on a device."""
    from tests.truth.cases import npu_trace_view

    monkeypatch.setattr(npu_trace_view, "STEPS", 70)
    trace = npu_trace_view.build(tmp_path / "raw")
    import_trace(trace, ImportOptions(out_dir=tmp_path / "prof"))
    found = _same_both_ways(tmp_path, tmp_path / "prof", calls)
    assert calls["refused"] == 1
    assert found["events"][0]["rows"] == 70 * (1 + 5 * 3)
    import pyarrow.dataset as pads

    kinds = pads.dataset(tmp_path / "serial" / "events", format="parquet").to_table(columns=["kind", "device"])
    assert kinds.column("kind").to_pylist().count("kernel") == 70 * 5

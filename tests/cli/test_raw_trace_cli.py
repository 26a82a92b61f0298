"""Reading commands given raw torch.profiler traces import them once into a cache beside them."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.cli import main
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.importer import trace_cache

from ..conftest import REPO

DLRM = REPO / "tests" / "data" / "dlrm_8rank"


@pytest.fixture
def traces(tmp_path: Path) -> list[Path]:
    """Two ranks of the public DLRM traces (recorded with distributedInfo), copied to a folder of their own."""
    folder = tmp_path / "traces"
    folder.mkdir()
    return [Path(shutil.copy(p, folder)) for p in sorted(DLRM.glob("worker[01]_*.json.gz"))]


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _entries(folder: Path) -> list[Path]:
    root = folder / ".kinetoscope" / "traces"
    return sorted(p for p in root.iterdir() if not p.name.startswith(".")) if root.is_dir() else []


def _without_run(analyses: dict[str, Any]) -> dict[str, Any]:
    """The analyses with the run name left out (a run is named after its folder)."""
    for section in analyses.values():
        for row in section["rows"]:
            row.pop("run", None)
    return analyses


def test_summary_of_raw_traces_equals_summary_of_their_import(
    traces: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, direct, err = _run(["summary", *map(str, traces), "--json", "--only", "overview,top_kernels"], capsys)
    assert code == 0, err
    assert "importing 2 trace(s)" in err
    sessions = tmp_path / "sessions"
    assert _run(["import", *map(str, traces), "--out", str(sessions)], capsys)[0] == 0
    code, imported, err = _run(["summary", str(sessions), "--json", "--only", "overview,top_kernels"], capsys)
    assert code == 0, err
    got, want = _without_run(json.loads(direct)["analyses"]), _without_run(json.loads(imported)["analyses"])
    assert got == want
    assert sorted({row["rank"] for row in got["overview"]["rows"]}) == [0, 1]


def test_the_same_traces_are_imported_once_and_a_rewritten_one_again(
    traces: list[Path], capsys: pytest.CaptureFixture[str]
) -> None:
    query = "SELECT count(*) AS n FROM events"
    code, first, err = _run(["sql", *map(str, traces), query, "--csv", "-"], capsys)
    assert code == 0 and "importing" in err, err
    code, second, err = _run(["sql", *map(str, traces), query, "--csv", "-"], capsys)
    assert code == 0 and "using the sessions imported" in err and second == first, err
    assert len(_entries(traces[0].parent)) == 1
    count = int(first.splitlines()[1])
    assert count > 4_000
    stat = traces[1].stat()
    os.utime(traces[1], ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    code, third, err = _run(["sql", *map(str, traces), query, "--csv", "-"], capsys)
    assert code == 0 and "importing" in err and third == first, err
    assert len(_entries(traces[0].parent)) == 2


def test_verify_and_findings_read_a_raw_trace(traces: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(["verify", str(traces[0]), "--json"], capsys)
    assert code in (0, 1), err  # warnings are allowed; the session was verified
    report = json.loads(out)
    assert [s["rank"] for s in report["sessions"]] == [0]
    assert report["sessions"][0]["events"] > 2_000
    code, out, err = _run(["findings", str(traces[0]), "--json"], capsys)
    assert code == 0, err
    assert "findings" in json.loads(out)


def test_a_folder_of_traces_is_one_profile(traces: list[Path], capsys: pytest.CaptureFixture[str]) -> None:
    query = "SELECT DISTINCT rank FROM events ORDER BY rank"
    code, out, err = _run(["sql", str(traces[0].parent), query, "--csv", "-"], capsys)
    assert code == 0, err
    assert out.split() == ['"rank"', "0", "1"]
    code, _, err = _run(["sql", str(traces[0].parent), "SELECT count(*) FROM events", "--csv", "-"], capsys)
    assert code == 0 and "using the sessions imported from 2 trace(s)" in err, err  # its own cache is no trace


def test_a_file_that_is_no_trace_is_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    code, _, err = _run(["summary", str(notes)], capsys)
    assert code == 2 and f"{notes}: not a dataset, a profile directory or a torch.profiler trace" in err
    code, _, err = _run(["summary", str(tmp_path / "missing.json")], capsys)
    assert code == 2 and "no such file or directory" in err


def test_an_unwritable_trace_folder_uses_the_user_cache(
    traces: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(trace_cache.os, "access", lambda *_: False)
    profile = trace_cache.profile_for(traces[:1])
    assert profile.is_relative_to(tmp_path / "cache" / "kinetoscope" / "traces")
    assert layout.is_profile(profile)
    assert _entries(traces[0].parent) == []


def test_an_interrupted_import_leaves_nothing_that_is_reused(
    traces: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    real_import = trace_cache.imp.import_trace
    calls: list[Path] = []

    def second_fails(trace: Path, options: Any) -> Any:
        calls.append(trace)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real_import(trace, options)

    with monkeypatch.context() as patch:
        patch.setattr(trace_cache.imp, "import_trace", second_fails)
        with pytest.raises(KeyboardInterrupt):
            trace_cache.profile_for(traces)
    root = traces[0].parent / ".kinetoscope" / "traces"
    assert len(calls) == 2 and list(root.iterdir()) == []
    assert layout.is_profile(trace_cache.profile_for(traces))


def test_traces_that_claim_the_same_rank_are_named_in_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "two-runs"
    folder.mkdir()
    first = Path(shutil.copy(next(DLRM.glob("worker0_*.json.gz")), folder / "a.json.gz"))
    shutil.copy(first, folder / "b.json.gz")
    code, _, err = _run(["sql", str(folder), "SELECT count(*) FROM events"], capsys)
    assert code == 0, err
    assert "warning: 2 traces claim rank 0 (a.json.gz, b.json.gz)" in err


def test_a_summary_of_raw_traces_starts_the_ingest_workers_before_importing_them(
    traces: list[Path], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN two traces large enough for a worker beside this process (the threshold lowered), and
    # a record of the workers started ahead, in the order of what happens
    from kinetoscope.format.kineto.trace_source import expanded_size_bytes
    from kinetoscope.ingest.running import pipeline, worker

    monkeypatch.setattr(pipeline, "PARALLEL_MIN_BYTES", 0)
    monkeypatch.setattr(pipeline.os, "cpu_count", lambda: 16)
    events: list[str] = []
    sizes: list[list[int]] = []
    real_prestart, real_import = worker.prestart, trace_cache.imp.import_trace
    monkeypatch.setattr(pipeline, "prestart", lambda n: (events.append(f"prestart {n}"), real_prestart(n)))
    monkeypatch.setattr(pipeline, "processes_for", _recording(pipeline.processes_for, sizes))
    monkeypatch.setattr(
        trace_cache.imp, "import_trace", lambda *a, **k: (events.append("import"), real_import(*a, **k))[1]
    )
    # WHEN the raw traces are summarised, twice
    assert _run(["summary", *map(str, traces), "--json", "--only", "overview"], capsys)[0] == 0
    assert _run(["summary", *map(str, traces), "--json", "--only", "overview"], capsys)[0] == 0
    # THEN one worker was started before the first import, counted at the traces' gunzipped sizes,
    # and the ingest took it (none is left waiting); the cached second run started none
    assert events == ["prestart 1", "import", "import"]
    assert sizes[0] == [expanded_size_bytes(t) for t in traces]
    assert worker.waiting_pids() == []


def _recording(function: Any, calls: list[list[int]]) -> Any:
    def recorded(sessions: int, trace_bytes: list[int], jobs: int = 0) -> int:
        calls.append(list(trace_bytes))
        return int(function(sessions, trace_bytes, jobs))

    return recorded


def test_two_jobs_rank_zero_traces_are_two_runs_never_one_rank(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN rank 0 of two jobs, recorded by two processes 77 million seconds apart
    folder = tmp_path / "two-jobs"
    for job in (0, 1):
        document = {
            "baseTimeNanoseconds": 1_760_000_000_000_000_000 + job * 77_000_000 * 10**9,
            "distributedInfo": {"rank": 0, "world_size": 2, "backend": "nccl"},
            "traceEvents": [
                {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 4000 + job, "tid": 4000 + job,
                 "ts": 10, "dur": 500, "args": {}},
            ],
        }
        folder.mkdir(exist_ok=True)
        (folder / f"job{job}.json").write_text(json.dumps(document))
    # WHEN summarised together
    code, out, err = _run(["summary", str(folder / "job0.json"), str(folder / "job1.json"), "--json"], capsys)
    # THEN each is a run of its own with its own 0.5 ms wall, and the warning names both files
    assert code == 0, err
    overview = json.loads(out)["analyses"]["overview"]["rows"]
    assert [(r["rank"], r["wall_ns"]) for r in overview] == [(0, 500_000), (0, 500_000)]
    assert len({r["run"] for r in overview}) == 2
    assert "claim rank 0 from different processes (job0.json, job1.json)" in err

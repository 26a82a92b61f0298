"""The explorer commands end to end through ``main(argv)``: verify, ingest, summary, sql, export."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from kinetoscope.cli import main
from kinetoscope.format.perfetto_packets.perfetto import protos
from kinetoscope.format.perfetto_packets.reader import iter_trace_packets
from kinetoscope.format.session_files import session_dir as layout

from ..ingest.helpers import import_scenario, kernel, write_session, x


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return import_scenario("dlrm_8rank", tmp_path_factory.mktemp("cli") / "prof")


def test_verify_prints_and_exits_by_severity(profile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", str(profile)]) == 0
    assert "8 session(s): 0 error(s), 0 problem(s)" in capsys.readouterr().out
    assert main(["verify", str(tmp_path), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["status"] == "unusable"


def test_ingest_then_summary_sql_and_export(profile: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dataset = tmp_path / "ds"
    assert main(["ingest", str(profile), "--out", str(dataset)]) == 0
    assert "8 session(s) ingested" in capsys.readouterr().out
    assert main(["summary", str(dataset), "--json", "--top", "2"]) == 0
    document = json.loads(capsys.readouterr().out)["analyses"]
    assert len(document["overview"]["rows"]) == 8 and len(document["top_kernels"]["rows"]) == 16
    assert main(["summary", str(dataset), "--markdown", "--only", "step_times"]) == 0
    assert "| step |" in capsys.readouterr().out.replace("run | ", "")
    query = "SELECT rank, count(*) AS n FROM events WHERE layer = $layer GROUP BY rank ORDER BY rank"
    assert main(["sql", str(dataset), query, "-p", "layer=device", "--csv", "-"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert [r["rank"] for r in rows] == [str(r) for r in range(8)]
    out = tmp_path / "merged.pftrace"
    assert main(["export", str(dataset), "--format", "perfetto", "-o", str(out)]) == 0
    packets = list(iter_trace_packets(out))
    processes = {p.track_descriptor.process.process_name for p in packets if p.track_descriptor.HasField("process")}
    assert {f"rank {r} · device {r}" for r in range(8)} <= processes
    assert sum(len(p.track_event.flow_ids) for p in packets) > 2000


def test_summary_ingests_a_profile_tree_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_session(tmp_path / "prof", [x("ProfilerStep#1", 0, 50, cat="user_annotation"), x("aten::add", 5, 10)])
    assert main(["summary", str(tmp_path / "prof"), "--only", "top_ops"]) == 0
    assert "aten::add" in capsys.readouterr().out
    assert (tmp_path / "prof" / ".kinetoscope" / "dataset" / "_dataset.json").exists()


def test_sql_errors_are_reported_not_raised(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_session(tmp_path / "prof", [x("op", 0, 1)])
    assert main(["sql", str(tmp_path / "prof"), "SELECT nope FROM events"]) == 1
    assert "query failed" in capsys.readouterr().err


def test_sql_prints_columns_that_share_a_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_session(tmp_path / "prof", [x("outer", 0, 10), x("inner", 2, 3)])
    query = "SELECT a.name, b.name FROM events a JOIN events b ON a.name = 'outer' AND b.name = 'inner'"
    assert main(["sql", str(tmp_path / "prof"), query]) == 0
    row = [line for line in capsys.readouterr().out.splitlines() if "outer" in line]
    assert len(row) == 1 and row[0].index("outer") < row[0].index("inner")


def test_sql_prints_values_literally_never_as_markup(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_session(tmp_path / "prof", [x("op", 0, 1)])
    assert main(["sql", str(tmp_path / "prof"), "SELECT '[memory]' AS \"[b]name[/b]\", '[bold]x[/bold]' AS v"]) == 0
    out = capsys.readouterr().out
    assert "[memory]" in out and "[bold]x[/bold]" in out and "[b]name[/b]" in out


def test_ingest_exit_code_says_partial(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_session(tmp_path / "prof", [x("op", 0, 1)], rank=0, pid=1)
    broken = write_session(tmp_path / "prof", [x("op", 0, 1)], rank=1, pid=2)
    (broken / layout.TRACE_JSON).write_bytes(b'{"traceEvents": [{"ph": "X", "na')
    assert main(["ingest", str(tmp_path / "prof"), "--out", str(tmp_path / "ds")]) == 1
    assert "partial" in capsys.readouterr().out


def test_chrome_export_is_json_with_flows_and_counters(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = [
        x("aten::mm", 0, 10, **{"External id": 1}),
        x("cudaLaunchKernel", 1, 2, cat="cuda_runtime", correlation=5, **{"External id": 1}),
        kernel("gemm", 4, 8, correlation=5),
        {"ph": "C", "name": "GPU util", "pid": 0, "ts": 3, "args": {"value": 40}},
    ]
    write_session(tmp_path / "prof", events)
    out = tmp_path / "merged.json"
    assert main(["export", str(tmp_path / "prof"), "-o", str(out)]) == 0
    trace = json.loads(out.read_text())
    phases = sorted(e["ph"] for e in trace["traceEvents"] if e["ph"] != "M")
    assert phases == ["C", "X", "X", "X", "f", "f", "s", "s"]
    assert trace["baseTimeNanoseconds"] > 0 and protos() is not None
    # both formats hold, and say they hold, the same slices, counter samples and flows
    chrome_said = capsys.readouterr().err
    assert "3 slices, 1 counter samples and 2 flows from 1 rank(s)" in chrome_said
    assert main(["export", str(tmp_path / "prof"), "-o", str(tmp_path / "merged.pftrace")]) == 0
    assert "3 slices, 1 counter samples and 2 flows from 1 rank(s)" in capsys.readouterr().err


def test_import_kinetoscope_loads_no_explorer_dependency() -> None:
    import subprocess

    from ..conftest import PYTHON, python_env

    code = (
        "import sys, kinetoscope; print(sorted(m for m in ('pyarrow', 'duckdb', 'numpy', 'rich') if m in sys.modules))"
    )
    done = subprocess.run([PYTHON, "-c", code], env=python_env(), capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"  # kinetoscope.open loads them on first use

"""``kinetoscope dump`` on every file kind, in-process and as a real subprocess."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kinetoscope.cli import main
from kinetoscope.format.session_files import trace_info as ti

from ..conftest import PYTHON, python_env
from ..format.perfetto_packets.test_perfetto_files import header, write_counter_file


def test_dump_packet_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_counter_file(tmp_path / "cpu_util.pb", header("cpu_util"), [1.5, 2.5])
    assert main(["dump", str(tmp_path / "cpu_util.pb")]) == 0
    out = capsys.readouterr().out
    assert "5 packet(s), file kind cpu_util" in out
    assert "double_counter_value: 2.5" in out
    assert 'process_labels: "kinetoscope.rank=2"' in out


def test_dump_truncated_file_reports_and_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_counter_file(tmp_path / "f.pb", header("cpu_util"), [1.5, 2.5])
    data = (tmp_path / "f.pb").read_bytes()
    (tmp_path / "f.pb").write_bytes(data[:-2])
    assert main(["dump", str(tmp_path / "f.pb")]) == 1
    out = capsys.readouterr().out
    assert "double_counter_value: 1.5" in out and "PROBLEM" in out and "cut short" in out


def test_dump_trace_info_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    info = ti.new_trace_info()
    info.state = ti.SessionState.SESSION_STATE_COMPLETE
    info.identity.rank = 5
    ti.write_trace_info(tmp_path, info)
    (tmp_path / "trace.json").write_text(json.dumps({"traceEvents": [{"name": "aten::mm", "ph": "X"}], "x": 1}))
    assert main(["dump", str(tmp_path / "trace_info.pb")]) == 0
    assert "rank: 5" in capsys.readouterr().out
    assert main(["dump", str(tmp_path / "trace.json")]) == 0
    assert '"name": "aten::mm"' in capsys.readouterr().out
    assert main(["dump", str(tmp_path)]) == 0
    assert "trace.json" in capsys.readouterr().out


def test_dump_truncated_trace_prints_what_it_can_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = [{"name": f"op{i}", "ph": "X", "ts": i, "dur": 1} for i in range(3)]
    text = json.dumps({"traceEvents": events})
    (tmp_path / "trace.json").write_text(text[: text.index('"op2"')])
    assert main(["dump", str(tmp_path / "trace.json")]) == 1
    out = capsys.readouterr().out
    assert '"name": "op1"' in out and "# 2 event(s)" in out
    assert "PROBLEM" in out and "event 2: the file ends inside this event" in out


def test_dump_a_directory_that_is_not_a_session_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump", str(tmp_path)]) == 0
    assert "not a session directory" in capsys.readouterr().out
    session = tmp_path / "host_pid_1" / "20260101T000000.000000Z_000"
    session.mkdir(parents=True)
    ti.write_trace_info(session, ti.new_trace_info())
    assert main(["dump", str(tmp_path)]) == 0
    assert "1 session(s) below it:\nhost_pid_1/20260101T000000.000000Z_000/" in capsys.readouterr().out


def test_dump_corrupt_trace_info_names_it_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "trace_info.pb").write_bytes(b"\xff" * 40)
    assert main(["dump", str(tmp_path / "trace_info.pb")]) == 1
    assert "trace_info.pb: not a TraceInfo message" in capsys.readouterr().err


def test_dump_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dump", str(tmp_path / "nope.pb")]) == 2
    assert "no such file" in capsys.readouterr().err


def test_dump_as_subprocess(tmp_path: Path) -> None:
    write_counter_file(tmp_path / "host_mem.pb", header("host_mem"), [3.0])
    done = subprocess.run(
        [PYTHON, "-m", "kinetoscope", "dump", str(tmp_path / "host_mem.pb"), "--limit", "1"],
        env=python_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert "[0]" in done.stdout and "more packet(s)" in done.stdout


def test_output_into_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    events = [{"name": f"op{i}", "ph": "X", "ts": i, "dur": 1} for i in range(5000)]
    (tmp_path / "trace.json").write_text(json.dumps({"traceEvents": events}))
    reader = subprocess.Popen(
        [PYTHON, "-m", "kinetoscope", "dump", str(tmp_path / "trace.json")],
        env=python_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert reader.stdout is not None and reader.stderr is not None
    reader.stdout.readline()
    reader.stdout.close()  # as `| head -1` does
    stderr = reader.stderr.read().decode()
    assert reader.wait(timeout=60) == 141
    assert "Traceback" not in stderr and "BrokenPipe" not in stderr


def test_dump_events_decodes_a_device_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from kinetoscope.importer import trace_import as imp

    from ..conftest import REPO

    trace = REPO / "tests" / "data" / "import-cuda-alexnet" / "benchmark_result_2869224_1695835535_trace.json.gz"
    result = imp.import_trace(trace, imp.ImportOptions(out_dir=tmp_path / "sessions"))
    assert result.session is not None and result.stats is not None
    device = result.session / "device_0.pb"
    assert main(["dump", "--events", str(device)]) == 0
    lines = capsys.readouterr().out.splitlines()[1:]
    assert len(lines) == result.stats.device_events  # every execution, each on one line
    assert all(line.startswith("slice 'stream ") and " dur=" in line and "correlation=" in line for line in lines)
    data = device.read_bytes()
    device.write_bytes(data[: len(data) // 2])
    assert main(["dump", "--events", str(device)]) == 1
    assert "# PROBLEM: byte " in capsys.readouterr().out

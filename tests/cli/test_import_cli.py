"""``kinetoscope import``: real traces become complete sessions; bad input is reported, not fatal."""

from __future__ import annotations

import gzip
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.cli import main
from kinetoscope.format.files import sha256_of
from kinetoscope.format.perfetto_packets.event_reader import iter_events
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti

from ..conftest import PYTHON, REPO, python_env

DATA = REPO / "tests" / "data"


def sessions(out: Path) -> list[Path]:
    return layout.find_sessions(out)


def output_counts(session: Path) -> tuple[int, int, int]:
    """(device executions, runtime calls, flows with both ends) read back from a session's files."""
    device = runtime = 0
    starts: set[int] = set()
    ends: set[int] = set()
    for path in session.glob("*.pb"):
        if path.name == layout.TRACE_INFO:
            continue
        for event in iter_events(path):
            if event.kind != "slice":
                continue
            if layout.parse_device_trace_name(path.name) is not None:
                device += 1
            else:
                runtime += 1
            starts.update(event.flow_ids)
            ends.update(event.terminating_flow_ids)
    return device, runtime, len(starts & ends)


def input_flows(path: Path) -> int:
    """Kineto launch flows in a trace file whose both ends are present."""
    document = json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes())
    starts, ends = set(), set()
    for event in document["traceEvents"]:
        if event.get("cat") in ("ac2g", "async", "async_cpu_to_gpu", "async_gpu"):
            (starts if event["ph"] == "s" else ends).add(event["id"])
    return len(starts & ends)


# scenario -> (device executions, runtime calls) counted in the input by category
# (kernel/memcpy/memset/gpu annotations; runtime/driver/sync calls and host collectives;
# record_param_comms is a framework op, so the large-ids trace has no runtime call).
GOLDEN = {
    "import-cuda-alexnet": (79 + 16 + 3, 361 + 41),
    "import-cuda-multi-stream": (3 + 3, 39 + 5),
    "import-rocm-mi250": (14 + 2 + 2, 21),
    "import-cpu-gloo": (0, 10),
    "import-legacy-kineto": (30 + 2, 42),
    "import-large-ids": (1, 0),
}
# Flows beyond Kineto's launch flow pairs: calls linked by their correlation id to the synchronization
# they caused where the trace's flow events have a finish and no start (3 in the multi-stream trace).
CORRELATION_ONLY_FLOWS = {"import-cuda-multi-stream": 3}


@pytest.mark.parametrize("scenario", sorted(GOLDEN))
def test_golden_counts_match_the_input(tmp_path: Path, scenario: str, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a real trace recorded elsewhere
    (trace,) = (DATA / scenario).glob("*.json*")
    # WHEN it is imported
    assert main(["import", str(trace), "--out", str(tmp_path)]) == 0
    (session,) = sessions(tmp_path)
    # THEN device executions, runtime calls and flows in the session equal those in the trace
    device, runtime, flows = output_counts(session)
    assert (device, runtime) == GOLDEN[scenario]
    assert flows == input_flows(trace) + CORRELATION_ONLY_FLOWS.get(scenario, 0)
    info = ti.read_trace_info(session)
    assert ti.state_name(info.state) == "COMPLETE"
    assert [f.name for f in info.files] == sorted(p.name for p in session.iterdir() if p.name != layout.TRACE_INFO)
    # Hashes made while copying equal the files' own
    assert all(f.sha256 == sha256_of(session / f.name) for f in info.files)
    assert info.import_source.sha256 == sha256_of(trace)
    assert (info.event_counts.device_events, info.event_counts.runtime_events) == GOLDEN[scenario]
    assert "imported" in capsys.readouterr().out


def test_trace_json_is_the_input_decompressed(tmp_path: Path) -> None:
    trace = DATA / "import-cuda-multi-stream" / "event_sync_trace.json.gz"
    main(["import", str(trace), "--out", str(tmp_path)])
    (session,) = sessions(tmp_path)
    assert (session / layout.TRACE_JSON).read_bytes() == gzip.decompress(trace.read_bytes())


def test_identity_comes_from_distributed_info(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    main(["import", str(DATA / "import-cpu-gloo"), str(DATA / "import-rocm-mi250"), "--out", str(tmp_path)])
    out = capsys.readouterr().out
    infos = {ti.read_trace_info(s).identity.pid: ti.read_trace_info(s) for s in sessions(tmp_path)}
    gloo = next(i for i in infos.values() if i.identity.rank_known)
    assert (gloo.identity.rank, gloo.identity.world_size, gloo.identity.backend) == (34, 300, "gloo")
    rocm = next(i for i in infos.values() if not i.identity.rank_known)
    assert not rocm.import_source.distributed_info
    assert "rank 34 of 300 (gloo)" in out
    assert "no distributedInfo in the trace: imported as a single process" in out


def write_trace(path: Path, events: list[Any], **metadata: Any) -> Path:
    path.write_text(json.dumps({"schemaVersion": 1, **metadata, "traceEvents": events}))
    return path


def kernel(ts: int) -> dict[str, Any]:
    return {
        "ph": "X",
        "cat": "kernel",
        "name": "k",
        "pid": 0,
        "tid": 7,
        "ts": ts,
        "dur": 1,
        "args": {"device": 0, "stream": 7, "correlation": ts},
    }


def test_several_files_claiming_one_rank_are_flagged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dist = {"rank": 0, "world_size": 2, "backend": "nccl"}
    a = write_trace(tmp_path / "a.json", [kernel(1)], distributedInfo=dist)
    b = write_trace(tmp_path / "b.json", [kernel(2)], distributedInfo=dist)
    assert main(["import", str(a), str(b), "--out", str(tmp_path / "out")]) == 0
    assert "warning: 2 traces claim rank 0 (world size 2)" in capsys.readouterr().out
    assert len(sessions(tmp_path / "out")) == 2


def test_damaged_trace_is_imported_with_its_damage_counted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a trace with an unreadable event in the middle, a negative duration, and a cut end
    good = [json.dumps(kernel(ts)) for ts in (1, 2, 3)]
    bad_duration = json.dumps({**kernel(4), "dur": -3})
    text = '{"traceEvents": [\n' + ",\n".join([good[0], '{"ph": X}', good[1], bad_duration, good[2]])
    path = tmp_path / "bad.json"
    path.write_text(text[:-10])
    # WHEN imported
    assert main(["import", str(path), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    # THEN what could be read is in the session, and every loss is named and counted
    (session,) = sessions(tmp_path / "out")
    assert output_counts(session)[0] == 2
    assert f"{path}: event 1: not valid JSON" in out
    assert f"{path}: event 3: negative duration" in out
    assert "truncated" in out
    skipped = {s.reason: s.count for s in ti.read_trace_info(session).skipped_events}
    assert skipped == {"malformed_json": 1, "negative_duration": 1, "truncated": 1}


def test_files_that_are_not_traces(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "in").mkdir()
    write_trace(tmp_path / "in" / "ok.json", [kernel(1)])
    (tmp_path / "in" / "notes.json").write_text('{"nodes": []}')
    # In a directory, a JSON file that is not a trace is left out with a note.
    assert main(["import", str(tmp_path / "in"), "--out", str(tmp_path / "out")]) == 0
    assert "left out" in capsys.readouterr().out
    # Named explicitly, it is an error.
    assert main(["import", str(tmp_path / "in" / "notes.json"), "--out", str(tmp_path / "out2")]) == 1
    assert "not a torch.profiler trace" in capsys.readouterr().out
    assert main(["import", str(tmp_path / "missing.json"), "--out", str(tmp_path / "out3")]) == 2


def test_reimport_is_idempotent_with_or_without_force(tmp_path: Path) -> None:
    trace = DATA / "import-large-ids" / "rank-70.Mar_25_20_48_12.2861.pt.trace.json.gz"
    main(["import", str(trace), "--out", str(tmp_path)])
    main(["import", str(trace), "--out", str(tmp_path)])
    assert len(sessions(tmp_path)) == 1  # the same trace replaces its own session
    main(["import", str(trace), "--out", str(tmp_path), "--force"])
    assert len(sessions(tmp_path)) == 1


def test_import_as_a_subprocess(tmp_path: Path) -> None:
    trace = DATA / "import-cuda-multi-stream" / "event_sync_trace.json.gz"
    done = subprocess.run(
        [PYTHON, "-m", "kinetoscope", "import", str(trace), "--out", str(tmp_path)],
        env=python_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert "1 session(s) written" in done.stdout


def test_a_bare_array_of_other_records_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN an execution_details.json-like file: a JSON array, but of records that are not trace events
    path = tmp_path / "execution_details.json"
    path.write_text(json.dumps([{"op": "aten::mm", "count": 3}, {"op": "aten::add", "count": 1}]))
    assert main(["import", str(path), "--out", str(tmp_path / "out")]) == 1
    assert "its array holds no trace events" in capsys.readouterr().out
    assert not sessions(tmp_path / "out")


def test_without_metadata_or_span_pid_and_start_come_from_the_events(tmp_path: Path) -> None:
    # GIVEN a trace with no process_name metadata and no profiler span
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 4321, "tid": 4321, "ts": 1.7e15, "dur": 5},
        kernel(1_700_000_000_000_010),
    ]
    trace = write_trace(tmp_path / "t.json", events)
    assert main(["import", str(trace), "--out", str(tmp_path / "out")]) == 0
    (session,) = sessions(tmp_path / "out")
    info = ti.read_trace_info(session)
    # THEN the session is the host process's, and starts at the first event, not at the file's mtime
    assert info.identity.pid == 4321
    assert info.start_clocks.realtime_ns == 1_700_000_000_000_000_000


def test_importing_the_same_trace_again_adds_no_second_session(tmp_path: Path) -> None:
    # GIVEN a trace imported twice into one folder, and a different trace of the same process and start
    trace = DATA / "import-cuda-alexnet" / "benchmark_result_2869224_1695835535_trace.json.gz"
    out = tmp_path / "sessions"
    assert main(["import", str(trace), "--out", str(out)]) == 0
    first = sessions(out)
    assert main(["import", str(trace), "--out", str(out)]) == 0
    # THEN the second import replaced the first: one session, the same path, counted once by ingest
    assert sessions(out) == first and len(first) == 1
    other = tmp_path / "other.json"
    text = gzip.decompress(trace.read_bytes())
    other.write_bytes(text.replace(b'"displayTimeUnit"', b'"note": 1, "displayTimeUnit"', 1))
    assert main(["import", str(other), "--out", str(out)]) == 0
    assert len(sessions(out)) == 2  # another trace (other bytes) at the same start takes the next cycle


def test_a_killed_import_leaves_no_staging_folder_once_the_next_one_runs(tmp_path: Path) -> None:
    # GIVEN an import SIGKILLed while it converts a large trace (its staging folder is left behind)
    events = [{"ph": "X", "cat": "cpu_op", "name": f"aten::op{i % 50}", "pid": 1, "tid": 1, "ts": i * 10, "dur": 5}
              for i in range(300_000)]  # fmt: skip
    trace = tmp_path / "big.json"
    trace.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    out = tmp_path / "sessions"
    command = [PYTHON, "-m", "kinetoscope", "import", str(trace), "--out", str(out)]
    killed = subprocess.Popen(command, env=python_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not list(out.glob(".import-*.tmp")) and killed.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    killed.kill()
    killed.wait()
    left = list(out.glob(".import-*.tmp"))
    assert left, "the import finished before it could be killed"
    # THEN the next import removes it and writes its session
    assert main(["import", str(DATA / "import-cpu-gloo"), "--out", str(out)]) == 0
    assert not list(out.glob(".import-*.tmp"))
    assert len(sessions(out)) == 1

"""The seed's three examples, ported to kinetoscope, run as real jobs (two ranks under torchrun)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from torch.cuda import _memory_viz

from kinetoscope.format.perfetto_packets.reader import read_packet_file
from kinetoscope.format.session_files.snapshot import load_snapshot

from .capture.helpers import check_complete_session, load_trace
from .conftest import PYTHON, python_env, requires_cxx
from .torchrun import EXAMPLES, job_failed, run_torchrun, sessions_by_rank

pytestmark = pytest.mark.slow


def test_basic_example(tmp_path: Path) -> None:
    done = subprocess.run([PYTHON, str(EXAMPLES / "basic.py"), str(tmp_path)], env=python_env(),
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    (session,) = tmp_path.glob("*/*")
    assert done.stdout.strip() == str(session)
    info = check_complete_session(session)
    assert {"trace.json", "ntrace.pb"} <= {f.name for f in info.files}
    assert any(e.get("name") == "aten::addmm" for e in load_trace(session)["traceEvents"])


def check_rank_sessions(out: Path, world_size: int) -> dict[int, tuple[Path, object]]:
    """Each rank wrote one complete session, identified in trace_info.pb and every packet file."""
    sessions = sessions_by_rank(out)
    assert sorted(sessions) == list(range(world_size))
    for rank, (session, _) in sessions.items():
        info = check_complete_session(session)
        ident = info.identity
        assert (ident.rank, ident.local_rank, ident.world_size, ident.backend, ident.rank_known) == (
            rank, rank, world_size, "gloo", True)
        for name in ("ntrace.pb", "cpu_util.pb", "host_mem.pb"):
            header = read_packet_file(session / name).header
            assert header is not None
            assert (header.rank, header.local_rank, header.world_size, header.backend) == (
                rank, rank, world_size, "gloo")
        check_compute_and_collective(session)
    return sessions


def check_compute_and_collective(session: Path) -> None:
    """The trace shows the matmuls on the main thread and the all_reduces on gloo's own threads."""
    events = [e for e in load_trace(session)["traceEvents"] if e.get("ph") == "X"]
    matmuls = [e for e in events if e["name"] == "aten::mm"]
    collectives = [e for e in events if e["name"] == "gloo:all_reduce"]
    assert len(matmuls) == 13 and len(collectives) == 13
    assert {e["tid"] for e in collectives}.isdisjoint({e["tid"] for e in matmuls})
    assert any(e["name"] == "model_inference" for e in events)


def test_multi_rank_example_two_ranks(tmp_path: Path) -> None:
    done = run_torchrun(EXAMPLES / "multi_rank.py", 2, str(tmp_path))
    assert done.returncode == 0, job_failed(done)
    check_rank_sessions(tmp_path, 2)


@requires_cxx
def test_memory_snapshot_example_two_ranks(tmp_path: Path) -> None:
    done = run_torchrun(EXAMPLES / "memory_snapshot.py", 2, str(tmp_path))
    assert done.returncode == 0, job_failed(done)
    for rank, (session, _) in check_rank_sessions(tmp_path, 2).items():
        info = check_complete_session(session)
        (entry,) = info.memory_snapshots
        assert (entry.file, entry.rank, entry.rank_from_name) == (f"memory_snapshot_rank{rank}.pickle", rank, True)
        snapshot = load_snapshot(session / entry.file)
        assert snapshot["kinetoscope"]["rank"] == rank and snapshot["kinetoscope"]["world_size"] == 2
        sizes = {e["size"] for e in snapshot["device_traces"][0] if e["action"] == "alloc"}
        assert {256 * 256 * 4, 64 * 1024 * 4} <= sizes  # the example's matrices and all_reduce buffer
        assert "total_allocated" in _memory_viz.segsum(snapshot)

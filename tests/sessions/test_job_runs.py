"""Two jobs written into one profile tree are ingested as two runs, never merged per rank."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.capture.environment import job_identity
from kinetoscope.format.session_files import trace_info as ti
from kinetoscope.sessions.job_runs import assign_runs
from kinetoscope.sessions.sources import SessionSource

from ..conftest import PYTHON, python_env
from ..torchrun import EXAMPLES, job_failed, run_torchrun

UUID_A, UUID_B = "0b6f3c2e-1111-4a5b-9c1d-aaaaaaaaaaaa", "7d2a9e41-2222-4c3d-8e2f-bbbbbbbbbbbb"


def _source(session: str, rank: int, job: str, start_ns: int) -> SessionSource:
    info = ti.new_trace_info()
    info.identity.job_id, info.identity.job_id_source = job, "TORCHELASTIC_RUN_ID" if job else ""
    info.start_clocks.realtime_ns = start_ns
    return SessionSource(Path(session), session, rank, 0, info)


def test_one_job_or_none_named_is_one_run() -> None:
    one = assign_runs([_source("a", 0, UUID_A, 5), _source("b", 1, UUID_A, 6)], "prof")
    assert set(one.runs.values()) == {"prof"}
    unnamed = assign_runs([_source("a", 0, "", 5), _source("b", 0, "", 6)], "prof")
    assert set(unnamed.runs.values()) == {"prof"} and unnamed.jobs == []


def test_the_earliest_job_keeps_the_name_and_later_ones_are_named_by_their_id() -> None:
    found = assign_runs([_source("late0", 0, UUID_B, 900), _source("early0", 0, UUID_A, 100),
                         _source("early1", 1, UUID_A, 101), _source("bare", 0, "", 50)], "prof")
    assert found.runs == {"early0": "prof", "early1": "prof", "late0": "prof.7d2a9e41", "bare": "prof"}
    assert [job for job, _, _ in found.jobs] == [UUID_A, UUID_B]
    hosts = assign_runs([_source("x", 0, "10.0.0.1:29500", 1), _source("y", 0, "10.0.0.1:29501", 2)], "p")
    assert hosts.runs == {"x": "p", "y": "p.10.0.0.1-29501"}


def test_the_job_id_comes_from_the_most_specific_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    assert job_identity() == ("", "")
    monkeypatch.setenv("MASTER_ADDR", "node1")
    monkeypatch.setenv("MASTER_PORT", "29500")
    assert job_identity() == ("node1:29500", "master")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", "none")  # torchrun's default when no id is given
    assert job_identity() == ("node1:29500", "master")
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    assert job_identity() == ("4242", "SLURM_JOB_ID")
    monkeypatch.setenv("TORCHELASTIC_RUN_ID", UUID_A)
    assert job_identity() == (UUID_A, "TORCHELASTIC_RUN_ID")
    monkeypatch.setenv("KINETOSCOPE_JOB_ID", "nightly-7")
    assert job_identity() == ("nightly-7", "KINETOSCOPE_JOB_ID")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-m", "kinetoscope", *args], env=python_env(), capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.fixture(scope="module")
def two_launches(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two torchrun launches of the multi-rank example (2 ranks each) written into one directory."""
    out = tmp_path_factory.mktemp("two-jobs") / "prof"
    for _ in range(2):
        done = run_torchrun(EXAMPLES / "multi_rank.py", 2, str(out))
        assert done.returncode == 0, job_failed(done)
    return out


def test_two_torchrun_launches_in_one_directory_are_two_runs(two_launches: Path) -> None:
    infos = [ti.read_trace_info(p) for p in sorted(two_launches.glob("*_pid_*/*"))]
    assert len(infos) == 4
    jobs = {info.identity.job_id for info in infos}
    assert len(jobs) == 2 and all(info.identity.job_id_source == "TORCHELASTIC_RUN_ID" for info in infos)

    ingested = _cli("ingest", str(two_launches))
    assert ingested.returncode == 0, ingested.stdout + ingested.stderr
    assert "2 jobs kept apart as runs 'prof', 'prof." in ingested.stdout
    summary = _cli("summary", str(two_launches), "--json", "--only", "overview")
    assert summary.returncode == 0, summary.stderr
    assert "kept apart as runs" in summary.stderr  # summary says so too (here: it read the dataset ingest made)
    overview = _section(json.loads(summary.stdout), "overview")
    per_run: dict[str, list[int]] = {}
    for row in overview:
        per_run.setdefault(row["run"], []).append(row["rank"])
    assert sorted(map(sorted, per_run.values())) == [[0, 1], [0, 1]]  # each rank once per job, not merged

    verified = _cli("verify", str(two_launches))
    assert "duplicate_rank" not in verified.stdout and "several_jobs" in verified.stdout, verified.stdout
    # gloo's all_reduce ops carry no metadata: matched by name and order, per job; each job's clocks
    # are checked. On a loaded machine a rank descheduled as a collective ends can read a few ms of
    # skew (the tolerance is 2 ms), which is not what this test is about.
    assert "could not be checked" not in verified.stdout, verified.stdout
    checked = set(re.findall(r"\[clock_(?:agreement|skew)\] job ([0-9a-f-]+):", verified.stdout))
    assert checked == jobs, verified.stdout
    skews_ms = [abs(float(ms)) for ms in re.findall(r"collectives end ([+-][0-9.]+) ms", verified.stdout)]
    assert all(skew < 20.0 for skew in skews_ms), verified.stdout


def _section(document: Any, name: str) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = document["analyses"][name]["rows"]
    return rows

"""Launching real multi-process jobs with torchrun (gloo on CPU) from tests."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from kinetoscope.format.session_files import trace_info as ti

from .conftest import PYTHON, REPO, python_env

EXAMPLES = REPO / "examples"


def torchrun_command(script: Path, nproc: int, *args: str) -> list[str]:
    """``--standalone`` rendezvous on a free port, so parallel jobs never clash."""
    return [PYTHON, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={nproc}",
            "--monitor-interval=0.1", str(script), *args]


def run_torchrun(script: Path, nproc: int, *args: str, timeout_s: float = 180,
                 env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    job_env = python_env() | {"OMP_NUM_THREADS": "1"} | (env or {})
    return subprocess.run(torchrun_command(script, nproc, *args), env=job_env, capture_output=True, text=True,
                          timeout=timeout_s, check=False)


def sessions_by_rank(out: Path) -> dict[int, tuple[Path, Any]]:
    """Every session under ``out`` with its trace_info, keyed by rank; a rank seen twice fails."""
    found: dict[int, tuple[Path, Any]] = {}
    for session in sorted(out.glob("*_pid_*/*")):
        info = ti.read_trace_info(session)
        assert info.identity.rank not in found, f"rank {info.identity.rank} claimed twice"
        found[info.identity.rank] = (session, info)
    return found


def job_failed(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\n--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-6000:]}"


def pids(paths: Sequence[Path]) -> list[int]:
    return [int(p.parent.name.rsplit("_pid_", 1)[1]) for p in paths]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True

"""Shared fixtures: a clean environment for every test, and helpers to run real profiles."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (
        *("RANK", "LOCAL_RANK", "WORLD_SIZE", "KINETOSCOPE_INSTANCE_ID", "KINETOSCOPE_ARTIFACT_CACHE_DIR"),
        *("KINETOSCOPE_DEVICE", "KINETOSCOPE_CATEGORIES"),
        *("KINETOSCOPE_JOB_ID", "TORCHELASTIC_RUN_ID", "SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID"),
        *("MASTER_ADDR", "MASTER_PORT"),
    ):
        monkeypatch.delenv(name, raising=False)


def python_env() -> dict[str, str]:
    """Environment for subprocesses that import kinetoscope from this checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO / "src"), env.get("PYTHONPATH", "")) if p)
    return env


PYTHON = sys.executable


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked ``gpu`` need a CUDA device; skip them cleanly without one."""
    if not any(item.get_closest_marker("gpu") for item in items):
        return
    import torch

    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if item.get_closest_marker("gpu"):
            item.add_marker(skip)


def _has_cxx() -> bool:
    import shutil

    return bool(os.environ.get("CXX") or any(shutil.which(c) for c in ("c++", "g++", "clang++")))


# The CPU memory history builds a small C++ hook, and torch.compile on CPU compiles C++.
requires_cxx = pytest.mark.skipif(not _has_cxx(), reason="needs a C++ compiler (g++ or clang++, or $CXX)")


def use_record_codec(kind: str, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Make ``trace_records.codec()`` a fresh codec of ``kind``: "msgspec" (skips when msgspec is not
    installed) or "dicts" (records made from dicts, as without msgspec). The process's own codec is
    never altered."""
    from kinetoscope.format.kineto import trace_records

    chosen = trace_records.RecordCodec()
    if kind == "dicts":
        chosen.decode_span = None
    elif chosen.decode_span is None:
        pytest.skip("msgspec is not installed")
    monkeypatch.setattr(trace_records, "codec", lambda: chosen)
    return chosen

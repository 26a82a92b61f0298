"""Building the CPU allocator hook: once per torch version, safely from many processes at once."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from kinetoscope import SessionError
from kinetoscope.capture import alloc_hook

from ..conftest import PYTHON, python_env, requires_cxx

BUILD_AND_RECORD = """
import sys, torch
from kinetoscope.capture import alloc_hook
hook = alloc_hook.load()
hook.start(100, True, False)
x = torch.empty(777)
entries, live, frames, tracebacks, total, recording = hook.snapshot()
assert recording and any(e[2] == 777 * 4 for e in entries), entries
print(alloc_hook.built_library())
"""


@pytest.mark.slow
@requires_cxx
def test_concurrent_processes_build_the_hook_once(tmp_path: Path) -> None:
    env = python_env() | {alloc_hook.CACHE_ENV: str(tmp_path / "cache")}
    procs = [subprocess.Popen([PYTHON, "-c", BUILD_AND_RECORD], env=env, stdout=subprocess.PIPE, text=True)
             for _ in range(3)]
    outputs = [proc.communicate(timeout=300)[0].strip() for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0]
    (library,) = set(outputs)
    assert Path(library).is_file() and Path(library).parent.parent.parent == tmp_path / "cache"
    assert not list(Path(library).parent.glob("*.tmp"))


def test_no_compiler_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(alloc_hook.shutil, "which", lambda _name: None)
    with pytest.raises(SessionError, match="needs a C\\+\\+ compiler once"):
        alloc_hook.compiler()


def test_failed_build_names_the_compiler_and_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(alloc_hook.CACHE_ENV, str(tmp_path))
    monkeypatch.setenv("CXX", "false")
    with pytest.raises(SessionError, match="false exited 1"):
        alloc_hook.built_library()
    assert [p.name for p in tmp_path.rglob("*") if p.is_file()] == ["build.lock"]

"""Building the CPU allocator hook: once per torch version, safely from many processes at once."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from kinetoscope import SessionError
from kinetoscope.capture.memory import alloc_hook

from ...conftest import PYTHON, python_env, requires_cxx

BUILD_AND_RECORD = """
import sys, torch
from kinetoscope.capture.memory import alloc_hook
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


def _plant(cache: Path) -> Path:
    """A 'library' where the hook of this torch would be found, as another user could leave it."""
    folder = cache / "alloc-hook" / alloc_hook.build_key()
    folder.mkdir(parents=True)
    library = folder / f"{alloc_hook.MODULE_NAME}{alloc_hook.sysconfig.get_config_var('EXT_SUFFIX') or '.so'}"
    library.write_bytes(b"planted")
    return library


def _never_compiled(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(library: Path) -> None:
        raise AssertionError(f"compiled {library}")

    monkeypatch.setattr(alloc_hook, "compile_library", refuse)


@pytest.mark.parametrize("how", ["shared cache", "world-writable folder", "other user's folder", "link"])
def test_a_library_planted_where_others_can_write_is_never_loaded(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    cache = tmp_path / "cache"
    library = _plant(cache)
    if how == "shared cache":  # KINETOSCOPE_CACHE_DIR in a folder everybody writes
        os.chmod(cache, 0o777)
    elif how == "world-writable folder":
        os.chmod(library.parent, 0o777)
    elif how == "other user's folder":
        if os.getuid() != 0:
            pytest.skip("only root can give a folder to another user")
        os.chown(library.parent, 65534, 65534)
        os.chown(library, 65534, 65534)
    else:
        theirs = tmp_path / "theirs"
        library.parent.rename(theirs)
        library.parent.symlink_to(theirs)
    monkeypatch.setenv(alloc_hook.CACHE_ENV, str(cache))
    _never_compiled(monkeypatch)
    with pytest.raises(SessionError, match=r"CPU allocator hook is not loaded: .* not (a )?private"):
        alloc_hook.built_library()


def test_the_hook_in_a_private_folder_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "shared"
    cache.mkdir()
    os.chmod(cache, 0o1777)  # a sticky shared folder (like /tmp) holding this user's own folders
    library = _plant(cache)
    monkeypatch.setenv(alloc_hook.CACHE_ENV, str(cache))
    _never_compiled(monkeypatch)
    assert alloc_hook.built_library() == library
    assert library.parent.stat().st_mode & 0o777 == 0o700

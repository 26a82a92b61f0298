"""A full disk while the framework trace is written gives a message that says so, and leaves no
temporary file of torch's behind (torch logs its write error and returns as if it had written)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import namedtuple
from pathlib import Path

import pytest

from kinetoscope import SessionError
from kinetoscope.capture.profiling import profiler

from ...conftest import PYTHON, python_env

Usage = namedtuple("Usage", "total used free")


class _SilentlyFailingProfile:
    """What torch does on a full disk: write part of its own temporary file, log, return."""

    def export_chrome_trace(self, path: str) -> None:
        Path(path + ".tmp").write_bytes(b'{"traceEvents": [')


def test_a_full_disk_is_named_with_its_free_space(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profiler.shutil, "disk_usage", lambda _: Usage(1 << 30, 1 << 30, 4096))
    with pytest.raises(SessionError, match=r"trace.json: the disk holding .* is full \(4,096 bytes free\)"):
        profiler.write_framework_trace(_SilentlyFailingProfile(), tmp_path)
    assert list(tmp_path.iterdir()) == []  # torch's trace.json.tmp.tmp is gone too


def test_a_trace_torch_did_not_write_on_a_disk_with_room_says_so(tmp_path: Path) -> None:
    with pytest.raises(SessionError, match=r"torch\.profiler did not write it"):
        profiler.write_framework_trace(_SilentlyFailingProfile(), tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mount"), reason="needs root to mount a small tmpfs")
def test_a_real_capture_on_a_full_tmpfs(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=192k", "tmpfs", str(small)], check=False).returncode:
        pytest.skip("mounting a tmpfs is not permitted here")
    try:
        done = subprocess.run([PYTHON, "-m", "kinetoscope", "demo", "--out", str(small / "demo")], env=python_env(),
                              capture_output=True, text=True, timeout=300, check=False)  # fmt: skip
        assert done.returncode != 0
        assert "is full (" in done.stderr and "No such file or directory" not in done.stderr, done.stderr
        assert not list(small.rglob("trace.json*"))
    finally:
        subprocess.run(["umount", str(small)], check=False)

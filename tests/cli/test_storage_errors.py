"""A full disk, a read-only file system or no permission: one line naming the path, never a traceback,
and the next ingest (with room) repairs the dataset."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from kinetoscope.cli.storage_errors import storage_message

from ..conftest import PYTHON, python_env

DATA = Path(__file__).resolve().parents[1] / "data"


STORAGE_ERRORS = [(errno.ENOSPC, "is full"), (errno.EDQUOT, "is full"), (errno.EROFS, "read-only file system"),
                  (errno.EACCES, "permission denied")]


@pytest.mark.parametrize(("code", "said"), STORAGE_ERRORS)
def test_storage_errors_are_named_with_their_path(code: int, said: str, tmp_path: Path) -> None:
    message = storage_message(OSError(code, os.strerror(code), str(tmp_path / "ds" / "part.parquet")))
    assert message is not None and said in message and str(tmp_path / "ds") in message
    # an error that names no file is put on the command's output
    unnamed = storage_message(OSError(code, os.strerror(code)), tmp_path / "out")
    assert unnamed is not None and str(tmp_path / "out") in unnamed


def test_other_os_errors_are_not_storage_errors() -> None:
    assert storage_message(OSError(errno.ECONNRESET, "reset")) is None


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PYTHON, "-m", "kinetoscope", *args], env=python_env(), capture_output=True, text=True,
                          timeout=300, check=False)


@contextmanager
def _tmpfs(where: Path, options: str) -> Iterator[Path]:
    where.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], check=False).returncode:
        pytest.skip("mounting a tmpfs is not permitted here")
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=False)


needs_mount = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mount"), reason="needs root to mount a tmpfs")


@pytest.fixture(scope="module")
def profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("storage") / "prof"
    done = _cli("import", str(DATA / "import-cpu-gloo"), "--out", str(out))
    assert done.returncode == 0, done.stderr
    return out


@needs_mount
def test_ingest_onto_a_full_disk_says_so_and_the_next_ingest_repairs(profile: Path, tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "small", "size=48k") as small:
        full = _cli("ingest", str(profile), "--out", str(small / "ds"))
        assert full.returncode == 2 and "Traceback" not in full.stderr
        assert f"the disk holding {small / 'ds'}" in full.stderr and "is full" in full.stderr
        subprocess.run(["mount", "-o", "remount,size=8m", str(small)], check=True)
        again = _cli("ingest", str(profile), "--out", str(small / "ds"))
        assert again.returncode == 0, again.stdout + again.stderr
        assert "repairing" in again.stdout + again.stderr
        query = "SELECT kind, count(*) AS n, sum(dur_ns) AS ns FROM events GROUP BY kind ORDER BY kind"
        counted, clean = _cli("sql", str(small / "ds"), query), _cli("sql", str(profile), query)
        assert counted.returncode == 0 and counted.stdout == clean.stdout


@needs_mount
def test_ingest_onto_a_read_only_file_system_says_so(profile: Path, tmp_path: Path) -> None:
    with _tmpfs(tmp_path / "ro", "ro,size=1m") as read_only:
        done = _cli("ingest", str(profile), "--out", str(read_only / "ds"))
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert f"{read_only / 'ds'}: read-only file system" in done.stderr

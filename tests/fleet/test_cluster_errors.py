"""What ingest says when the cluster or the store cannot be reached: a message, exit status 2, and the
dataset as it was."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from kinetoscope.dataset.transaction import LOCK_FILE

from ..conftest import PYTHON, python_env
from ..ingest.helpers import write_session, x
from .conftest import Store


def kinetoscope(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [PYTHON, "-m", "kinetoscope", *args], env=env, capture_output=True, text=True, timeout=300, check=False
    )


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _contents(dataset: Path) -> dict[Path, bytes]:
    """Every file of a dataset but the writer lock (which holds the last writer's pid, no data)."""
    return {p: p.read_bytes() for p in sorted(dataset.rglob("*")) if p.is_file() and p.name != LOCK_FILE}


def test_an_unreachable_scheduler_leaves_the_dataset_as_it_was(tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="needs Dask's distributed scheduler (pip install 'kinetoscope[fleet]')")
    # GIVEN a dataset ingested locally
    write_session(tmp_path / "prof", [x("aten::mm", 10, 40)])
    env = {**python_env(), "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "2s"}
    assert kinetoscope(env, "ingest", str(tmp_path / "prof"), "--out", str(tmp_path / "ds")).returncode == 0
    before = _contents(tmp_path / "ds")
    # WHEN every session is to be ingested again, by a scheduler nobody listens for
    address = f"tcp://127.0.0.1:{closed_port()}"
    tree, out = str(tmp_path / "prof"), str(tmp_path / "ds")
    done = kinetoscope(env, "ingest", tree, "--out", out, "--force", "--scheduler", address)
    # THEN ingest says so, and no part and no manifest changed
    assert done.returncode == 2, done.stderr
    assert f"{address}: cannot reach the Dask scheduler" in done.stderr and "Traceback" not in done.stderr
    assert _contents(tmp_path / "ds") == before


def test_a_bucket_that_does_not_exist_is_named(s3_store: Store, tmp_path: Path) -> None:
    done = kinetoscope(s3_store.env, "ingest", "s3://no-such-bucket-here/train", "--out", str(tmp_path / "ds"))
    assert done.returncode == 2, done.stderr
    assert "s3://no-such-bucket-here/train: no such file or directory (or bucket)" in done.stderr
    assert "Traceback" not in done.stderr

"""A real fleet on 127.0.0.1: an S3-compatible server (moto's server mode), a Dask scheduler and two
Dask workers, each a process of its own; torn down whatever the tests did."""

from __future__ import annotations

import contextlib
import json
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..conftest import PYTHON, python_env

BUCKET = "fleet-profiles"
WORKERS = 2
# How long a process on a loaded machine may take to come up before the fixture gives up (not a test assertion).
START_LIMIT_S = 180
AWS = {
    "AWS_ACCESS_KEY_ID": "fleet-test",
    "AWS_SECRET_ACCESS_KEY": "fleet-test-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
    "AWS_EC2_METADATA_DISABLED": "true",  # never ask a cloud metadata service for credentials or region
}


@dataclass(frozen=True)
class Fleet:
    endpoint: str  # http://127.0.0.1:PORT of the S3 server
    scheduler: str  # tcp://127.0.0.1:PORT
    env: dict[str, str]  # for commands that reach both

    def url(self, key: str) -> str:
        return f"s3://{BUCKET}/{key}"


def _until(ready: Callable[[], bool], what: str, processes: list[subprocess.Popen[bytes]]) -> None:
    deadline = time.monotonic() + START_LIMIT_S
    while not ready():
        dead = [p.args for p in processes if p.poll() is not None]
        if dead or time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not start: {dead or 'still not ready'}")
        time.sleep(0.2)


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _start(stack: contextlib.ExitStack, command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    out = stack.enter_context(log.open("wb"))
    process = subprocess.Popen(command, env=env, stdout=out, stderr=subprocess.STDOUT)
    stack.callback(_stop, process)
    return process


def _s3_server(stack: contextlib.ExitStack) -> str:
    moto_server = pytest.importorskip("moto.server", reason="needs moto's server mode (moto[s3], flask-cors)")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    stack.callback(server.stop)
    host, port = server.get_host_and_port()
    return f"http://{host}:{port}"


def _cluster(stack: contextlib.ExitStack, env: dict[str, str], work: Path) -> str:
    from distributed import Client

    dask = [PYTHON, "-m", "dask"]
    info = work / "scheduler.json"
    scheduler = [*dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard", "--scheduler-file"]
    started = [_start(stack, [*scheduler, str(info)], env, work / "scheduler.log")]
    _until(info.exists, "dask scheduler", started)
    _until(lambda: bool(info.read_text().strip()), "dask scheduler", started)
    address = str(json.loads(info.read_text())["address"])
    for n in range(WORKERS):
        worker = [*dask, "worker", address, "--host", "127.0.0.1", "--nthreads", "1", "--no-nanny", "--no-dashboard"]
        worker += ["--local-directory", str(work / f"worker{n}")]
        started.append(_start(stack, worker, env, work / f"worker{n}.log"))
    with Client(address, timeout=START_LIMIT_S) as client:
        client.wait_for_workers(WORKERS, timeout=START_LIMIT_S)
    return address


@dataclass(frozen=True)
class Store:
    endpoint: str  # http://127.0.0.1:PORT of the S3 server
    env: dict[str, str]  # for commands that reach it


@pytest.fixture(scope="module")
def s3_store() -> Iterator[Store]:
    """The S3 server with its bucket, and the AWS settings pointing at it (in this process too)."""
    with contextlib.ExitStack() as stack, pytest.MonkeyPatch.context() as patch:
        endpoint = _s3_server(stack)
        for name, value in {**AWS, "AWS_ENDPOINT_URL": endpoint}.items():
            patch.setenv(name, value)
        import pyarrow.fs as pafs

        bucket, _ = pafs.FileSystem.from_uri(f"s3://{BUCKET}?allow_bucket_creation=true")
        bucket.create_dir(BUCKET)
        yield Store(endpoint, python_env())


@pytest.fixture(scope="module")
def fleet(s3_store: Store, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    pytest.importorskip("distributed", reason="needs Dask's distributed scheduler (pip install 'kinetoscope[fleet]')")
    with contextlib.ExitStack() as stack:
        yield Fleet(s3_store.endpoint, _cluster(stack, s3_store.env, tmp_path_factory.mktemp("fleet")), s3_store.env)

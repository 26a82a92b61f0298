"""Load: 200 concurrent requests of every kind against a real `kinetoscope view` process give 0 errors."""

from __future__ import annotations

import json
import random
import re
import subprocess
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from ..conftest import PYTHON, python_env
from .helpers import sign_in

DATA = Path(__file__).resolve().parents[1] / "data"
REQUESTS = 200
CLIENTS = 32
QUERIES = ["AllReduce", "aten::mm rank:3", "cat:kernel", "embedding OR mm", '"aten::linear"']


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """`kinetoscope view` on the eight DLRM ranks (imported, ingested, indexed by the command itself)."""
    out = tmp_path_factory.mktemp("load") / "prof"
    subprocess.run([PYTHON, "-m", "kinetoscope", "import", str(DATA / "dlrm_8rank"), "--out", str(out)],
                   env=python_env(), check=True, capture_output=True, timeout=180)
    proc = subprocess.Popen([PYTHON, "-m", "kinetoscope", "view", str(out), "--no-browser"], env=python_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        base, session = sign_in(_printed_url(proc))
        yield base.rstrip("/"), session["X-Kinetoscope-Session"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _printed_url(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    for line in proc.stdout:
        found = re.search(r"http://\S+code=\S+", line)
        if found:
            return found.group(0)
    raise AssertionError(f"kinetoscope view exited ({proc.wait()}) without printing its URL")


def _call(base: str, session: str, method: str, path: str, body: str | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(base + path, method=method, data=body.encode() if body is not None else None,
                                     headers={"X-Kinetoscope-Session": session})
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _requests(meta: dict[str, Any], ids: list[int], seed: int) -> list[tuple[str, str, str | None]]:
    """A mix of what a page does: windows at every zoom, events, flows, search, ranges, SQL, summary."""
    pick = random.Random(seed)
    span_ns = int(meta["span_ns"])
    made: list[tuple[str, str, str | None]] = []
    for _ in range(REQUESTS):
        start = pick.randrange(0, span_ns)
        end = min(span_ns, start + pick.choice([span_ns, span_ns // 10, 50_000, 1_000]))
        made.append(pick.choice([
            ("GET", f"/api/window?start={start}&end={end}&px=1200", None),
            ("GET", f"/api/range?start={start}&end={end}", None),
            ("GET", f"/api/event/{pick.choice(ids)}", None),
            ("GET", f"/api/flows/{pick.choice(ids)}", None),
            ("GET", "/api/search?q=" + urllib.parse.quote(pick.choice(QUERIES)), None),
            ("POST", "/api/sql", json.dumps({"q": "SELECT kind, count(*) AS n FROM events GROUP BY kind"})),
            ("GET", "/api/sql.csv?q=" + urllib.parse.quote("SELECT name FROM events LIMIT 50"), None),
            ("GET", "/api/summary", None),
            ("GET", "/api/findings", None),
            ("GET", "/api/meta", None),
            ("GET", "/", None),
        ]))
    return made


def _wait_until_ready(base: str, session: str) -> None:
    """`kinetoscope view` answers at once and prepares the dataset behind /api/progress."""
    import time

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        status, body = _call(base, session, "GET", "/api/progress")
        assert status == 200, body
        progress = json.loads(body)
        assert progress["error"] is None, progress
        if progress["ready"]:
            return
        time.sleep(0.2)
    raise AssertionError("the viewer was not ready within 300 s")


def test_two_hundred_concurrent_requests_give_no_error(viewer: tuple[str, str]) -> None:
    base, session = viewer
    _wait_until_ready(base, session)
    status, body = _call(base, session, "GET", "/api/meta")
    assert status == 200
    status, found = _call(base, session, "POST", "/api/sql", json.dumps({"q": "SELECT id FROM events LIMIT 500"}))
    assert status == 200
    ids = [row[0] for row in json.loads(found)["rows"]]
    planned = _requests(json.loads(body), ids, seed=7)
    with ThreadPoolExecutor(CLIENTS) as pool:
        results = list(pool.map(lambda r: (r, *_call(base, session, *r)), planned))
    failed = [(r[1], status, body[:200]) for r, status, body in results if status != 200]
    assert not failed, f"{len(failed)} of {REQUESTS} failed: {failed[:5]}"
    for (_, path, _), _, body in results:
        if path.startswith("/api/") and ".csv" not in path:
            json.loads(body)  # every API answer is whole JSON
    # and the server still answers afterwards
    assert _call(base, session, "GET", "/api/meta")[0] == 200

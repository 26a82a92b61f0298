"""Requests an attacker (or a mistyped URL) can send the viewer: each is answered with a clear
4xx, never a 500, and never runs or returns more than the limits allow."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.viewer.index import ViewerIndex
from kinetoscope.viewer.sql import KILL_GRACE_S, SqlRejectedError, SqlRunner

from .helpers import running_server
from .test_api import fetch

HOSTILE_NUMBERS = ["1e400", "-1e400", "inf", "nan", "abc", "99999999999999999999999", "-9223372036854775809",
                   str(2**53 + 1), "0x10", "1,1e400"]
NUMERIC_PARAMS = {
    "/api/window": ["start", "end", "px", "tracks"],
    "/api/counters": ["start", "end", "px", "ids"],
    "/api/range": ["start", "end", "tracks"],
    "/api/op_at": ["rank", "ts"],
    "/api/stack": ["rank", "stack_id"],
    "/api/memory/allocations": ["rank", "device"],
}
GOOD = {"start": "0", "end": "1000", "px": "100", "rank": "0", "ts": "0", "stack_id": "0", "device": "0",
        "tracks": "0", "ids": "0"}


@pytest.fixture(scope="module")
def base(multirank: ViewerIndex) -> Iterator[str]:
    with running_server(multirank) as url:
        yield url


@pytest.mark.parametrize("path", NUMERIC_PARAMS)
def test_out_of_range_or_non_numeric_parameters_are_a_400_with_the_name(base: str, path: str) -> None:
    for name in NUMERIC_PARAMS[path]:
        for value in HOSTILE_NUMBERS:
            query = "&".join(f"{k}={value if k == name else GOOD[k]}" for k in NUMERIC_PARAMS[path])
            status, body, _ = fetch(f"{base}{path}?{query}")
            assert status == 400, (path, name, value, body)
            assert name in json.loads(body)["error"]


def _peak_rss_bytes() -> int:
    status = Path("/proc/self/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("VmHWM"))) * 1024


def _sql(base: str, query: str) -> tuple[int, Any]:
    status, body, _ = fetch(base + "/api/sql", data=json.dumps({"q": query}).encode(),
                            headers={"Content-Type": "application/json"})
    return status, json.loads(body)


def test_a_huge_result_is_refused_without_growing_the_server(base: str) -> None:
    before = _peak_rss_bytes()
    status, body = _sql(base, "SELECT repeat('x', 100000000) FROM range(12)")
    assert status == 400 and "memory" in body["error"]
    status, body = _sql(base, "SELECT repeat('x', 1000000) FROM range(20)")  # 20 MB of result
    assert status == 400 and "larger than 16 MiB" in body["error"]
    assert _peak_rss_bytes() - before < 200 << 20
    assert _sql(base, "SELECT 42 AS x")[1]["rows"] == [[42]]


def test_a_long_query_is_stopped_and_the_next_one_runs(multirank: ViewerIndex) -> None:
    runner = SqlRunner(multirank.dataset, time_limit_s=1)
    started = time.monotonic()
    with pytest.raises(SqlRejectedError, match="longer than 1 s"):
        runner.run("SELECT count(*) FROM range(100000000) a, range(100000000) b")
    assert time.monotonic() - started < 1 + KILL_GRACE_S + 5
    assert runner.run("SELECT 1 AS one").rows == [[1]]
    runner.close()

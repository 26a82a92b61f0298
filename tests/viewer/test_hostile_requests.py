"""Requests an attacker (or a mistyped URL) can send the viewer: each is answered with a clear
4xx, never a 500, and never runs or returns more than the limits allow."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying.sql import KILL_GRACE_S, SqlRejectedError, SqlRunner
from kinetoscope.viewer.serving.access import Access

from .helpers import exchange, running_server
from .test_api import fetch

HOSTILE_NUMBERS = ["1e400", "-1e400", "inf", "nan", "abc", "99999999999999999999999", "-9223372036854775809",
                   str(2**62 + 1), "0x10", "1,1e400"]
NUMERIC_PARAMS = {
    "/api/window": ["start", "end", "px", "tracks", "ops"],
    "/api/area": ["start", "end", "tracks"],
    "/api/area/pivot": ["start", "end", "tracks"],
    "/api/counters": ["start", "end", "px", "ids"],
    "/api/range": ["start", "end", "tracks"],
    "/api/op_at": ["rank", "ts"],
    "/api/stack": ["rank", "stack_id"],
    "/api/memory/allocations": ["rank", "device"],
    "/api/memory/segments": ["rank", "device", "at_ns"],
}
GOOD = {"start": "0", "end": "1000", "px": "100", "rank": "0", "ts": "0", "stack_id": "0", "device": "0",
        "tracks": "0", "ids": "0", "ops": "0", "at_ns": "0"}


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


def test_an_area_that_cannot_be_answered_says_why(base: str) -> None:
    status, body, _ = fetch(f"{base}/api/area?start=0&end=1000&tracks=0&view=gpu")
    assert status == 400 and "unknown view 'gpu'" in json.loads(body)["error"]
    status, body, _ = fetch(f"{base}/api/area?start=1000&end=1000&tracks=0")
    assert status == 400 and "must be after its start" in json.loads(body)["error"]
    status, body, _ = fetch(f"{base}/api/neighbour/123456789?dir=next")
    assert status == 200 and json.loads(body) is None  # no such event: nothing next to it


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
        # a streaming scan of 10^12 rows: minutes of CPU, no memory (a cross join of two large ranges
        # could hit the memory limit first on a loaded machine)
        runner.run("SELECT count(*) FROM range(1000000000000) a WHERE a.range % 7 = 3")
    assert time.monotonic() - started < 1 + KILL_GRACE_S + 5
    assert runner.run("SELECT 1 AS one").rows == [[1]]
    runner.close()


@pytest.fixture(scope="module")
def guarded(multirank: ViewerIndex) -> Iterator[tuple[str, dict[str, str]]]:
    """A server requiring sign-in, and the session header of a page that opened a link of it."""
    access = Access()
    with running_server(multirank, access=access) as url:
        status, answer = exchange(url, access.new_code())
        assert status == 200
        yield url, {"X-Kinetoscope-Session": str(answer["session"])}


def test_another_sites_page_cannot_post_sql_even_with_the_users_session(guarded: tuple[str, dict[str, str]]) -> None:
    url, session = guarded
    body = json.dumps({"q": "SELECT count(*) FROM events"}).encode()
    for origin, site in [("http://evil.example", "cross-site"), ("http://127.0.0.1:9", "same-site"),
                         ("null", "cross-site")]:
        headers = {"Content-Type": "text/plain", **session, "Origin": origin, "Sec-Fetch-Site": site}
        status, answer, _ = fetch(url + "/api/sql", data=body, headers=headers)
        assert status == 403 and b"cross-site" in answer, origin
    same = {"Content-Type": "application/json", **session, "Origin": url, "Sec-Fetch-Site": "same-origin"}
    assert fetch(url + "/api/sql", data=body, headers=same)[0] == 200


def test_another_sites_image_tag_cannot_load_csv(guarded: tuple[str, dict[str, str]]) -> None:
    url, session = guarded
    csv_url = url + "/api/sql.csv?q=SELECT%201"
    for site in ("cross-site", "same-site"):  # same-site: a page on another port of localhost
        headers = {**session, "Sec-Fetch-Site": site, "Sec-Fetch-Dest": "image"}
        assert fetch(csv_url, headers=headers)[0] == 403, site
    assert fetch(csv_url, headers={"Sec-Fetch-Site": "same-origin"})[0] == 401  # an image sends no header
    assert fetch(csv_url, headers={**session, "Sec-Fetch-Site": "same-origin"})[0] == 200


def test_a_session_exchange_from_another_site_is_refused(guarded: tuple[str, dict[str, str]]) -> None:
    url, _ = guarded
    status, _ = exchange(url, "whatever", headers={"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"})
    assert status == 403


def test_sql_cannot_read_the_working_directorys_tmp(multirank: ViewerIndex, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """DuckDB lets a connection read its temporary folder, by default `.tmp` of the working
    directory: the SQL worker's is a private folder of its own, removed with it."""
    (tmp_path / ".tmp").mkdir()
    (tmp_path / ".tmp" / "secret.csv").write_text("secret,1\n")
    monkeypatch.chdir(tmp_path)
    runner = SqlRunner(multirank.dataset)
    try:
        for path in (".tmp/secret.csv", str(tmp_path / ".tmp" / "secret.csv")):
            with pytest.raises(SqlRejectedError):
                runner.run(f"SELECT * FROM read_csv('{path}')")
        (spill,) = runner.run("SELECT current_setting('temp_directory') AS d").rows[0]
        assert Path(spill).stat().st_mode & 0o777 == 0o700 and Path(spill).parent.name == "sql"
    finally:
        runner.close()
    assert not Path(spill).exists()

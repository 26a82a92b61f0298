"""The JSON API over a live server: every endpoint, read-only SQL, sessions, hosts and path traversal."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kinetoscope.analysis import ANALYSES
from kinetoscope.viewer.indexing.index import ViewerIndex

from ..kineto_gen import HOSTILE_NAME
from .helpers import running_server


def fetch(url: str, *, data: bytes | None = None, headers: dict[str, str] | None = None) -> tuple[int, bytes, Any]:
    request = urllib.request.Request(url, data=data, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read(), response.headers
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read(), exc.headers


def api(base: str, path: str, **params: object) -> Any:
    query = "&".join(f"{k}={urllib.request.quote(str(v))}" for k, v in params.items())
    status, body, _ = fetch(f"{base}{path}?{query}")
    assert status == 200, body
    return json.loads(body)


@pytest.fixture(scope="module")
def base(multirank: ViewerIndex) -> Iterator[str]:
    with running_server(multirank) as url:
        yield url


def test_meta_lists_tracks_of_every_rank_counters_and_warnings(base: str) -> None:
    meta = api(base, "/api/meta")
    assert {t["rank"] for t in meta["tracks"]} == {0, 1, 2, 3}
    assert {t["layer"] for t in meta["tracks"]} == {"framework", "runtime", "device"}
    assert int(meta["t0_ns"]) > 2**53  # epoch ns: sent as a string, times are offsets from it
    assert any(c["name"].startswith("CPU 0") for c in meta["counters"])
    assert {w["kind"] for w in meta["warnings"]} == {"dropped_events", "truncated", "mode_outcome"}
    assert {w["severity"] for w in meta["warnings"] if w["kind"] == "mode_outcome"} == {"note"}


def test_window_never_sends_more_than_one_screen(base: str) -> None:
    meta = api(base, "/api/meta")
    tracks = ",".join(str(t["id"]) for t in meta["tracks"])
    narrow = api(base, "/api/window", start=0, end=meta["span_ns"], px=50, tracks=tracks)
    wide = api(base, "/api/window", start=0, end=meta["span_ns"], px=4000, tracks=tracks)
    shown = len(narrow["slices"]["id"]) + sum(narrow["blocks"]["count"])
    assert shown == meta["event_count"]  # every event is either a slice or counted in a block
    assert len(narrow["slices"]["id"]) < len(wide["slices"]["id"])
    assert all(d >= narrow["px_ns"] or d == 0 for d in narrow["slices"]["dur"])  # instants are drawn as markers


def test_event_details_have_fields_args_and_python_stack(base: str) -> None:
    hit = api(base, "/api/search", q="aten::addmm rank:2")["hits"][0]
    details = api(base, f"/api/event/{hit['id']}")
    assert details["name"] == "aten::addmm" and details["rank"] == 2
    assert details["fields"]["category"] == "cpu_op"
    assert details["args"]["Input Dims"] == [[64, 4096]]
    assert [f["file"] for f in details["stack"]][:2] == ["torch/nn/modules/linear.py", "model.py"]


def test_dependency_chain_goes_framework_runtime_device(base: str) -> None:
    hit = api(base, "/api/search", q="aten::addmm")["hits"][0]
    chain = api(base, f"/api/flows/{hit['id']}")
    assert [e["layer"] for e in chain["downstream"]] == ["runtime", "device"]
    kernel = chain["downstream"][1]
    back = api(base, f"/api/flows/{kernel['id']}")
    assert [e["name"] for e in back["upstream"]] == ["cudaLaunchKernel", "aten::addmm"]
    assert {e["kind"] for e in back["edges"]} == {"framework_runtime", "runtime_device"}


def test_search_by_field_and_duration(base: str) -> None:
    kernels = api(base, "/api/search", q="cat:kernel rank:1")
    assert kernels["total"] > 0 and all(h["name"] for h in kernels["hits"])
    long_ones = api(base, "/api/search", q="cat:kernel rank:1 dur>20us")
    assert 0 < long_ones["total"] < kernels["total"]
    assert all(h["dur"] > 20_000 for h in long_ones["hits"])
    assert api(base, "/api/search", q="no-such-event-name")["total"] == 0


def test_search_pages_reach_every_hit_in_time_order(base: str) -> None:
    first = api(base, "/api/search", q="aten")
    assert first["total"] > 200 and len(first["hits"]) == 200 and first["hits"][0]["n"] == 1
    last = api(base, "/api/search", q="aten", offset=first["total"] - 1)
    assert [h["n"] for h in last["hits"]] == [first["total"]]
    seen = [h for offset in range(0, first["total"], 200)
            for h in api(base, "/api/search", q="aten", offset=offset)["hits"]]
    assert len({h["id"] for h in seen}) == first["total"]
    assert [(h["ts"], int(h["id"])) for h in seen] == sorted((h["ts"], int(h["id"])) for h in seen)
    assert {h["rank"] for h in seen} == {0, 1, 2, 3}


def test_search_or_quotes_and_regex(base: str) -> None:
    count = lambda q: api(base, "/api/search", q=q)["total"]  # noqa: E731
    mm, addmm = count("name:aten::mm"), count("name:aten::addmm")
    assert count("name:aten::mm OR name:aten::addmm") == mm + addmm
    assert count("/^aten::(mm|addmm)$/") == mm + addmm
    assert count('"Memcpy HtoD"') == count("Memcpy HtoD") > 0
    assert count('"HtoD Memcpy"') == 0  # a phrase keeps its word order
    assert count("aten::addmm rank:2") < addmm


@pytest.mark.parametrize(("query", "says"), [
    ("dur>1xs", "durations"), ("rank:abc", "whole number"), ('"aten', "unclosed quote"),
    ("/aten(/", "not a valid regex"), ("/aten", "closing slash"), ("aten OR", "OR needs"), ('foo:"x"', "unknown field"),
])
def test_search_syntax_errors_say_what_is_wrong(base: str, query: str, says: str) -> None:
    status, body, _ = fetch(f"{base}/api/search?q={urllib.request.quote(query)}")
    assert status == 400 and says in json.loads(body)["error"]


def test_matches_lists_the_hits_in_a_window(base: str) -> None:
    meta = api(base, "/api/meta")
    tracks = ",".join(str(t["id"]) for t in meta["tracks"])
    found = api(base, "/api/matches", q="aten::addmm", start=0, end=meta["span_ns"], tracks=tracks)
    assert len(found["ids"]) == api(base, "/api/search", q="aten::addmm")["total"] and not found["truncated"]


def test_range_summary_and_counters(base: str) -> None:
    meta = api(base, "/api/meta")
    tracks = ",".join(str(t["id"]) for t in meta["tracks"])
    summary = api(base, "/api/range", start=0, end=meta["span_ns"] // 2, tracks=tracks)
    assert summary["top_kernels"][0]["total_ns"] >= summary["top_kernels"][-1]["total_ns"]
    assert all(0 < b["busy_ns"] <= meta["span_ns"] // 2 for b in summary["busy"])
    ids = ",".join(str(c["id"]) for c in meta["counters"][:3])
    series = api(base, "/api/counters", start=0, end=meta["span_ns"], px=100, ids=ids)["series"]
    assert len(series) == 3 and all(len(s["ts"]) <= 101 for s in series.values())


def test_memory_endpoints(base: str) -> None:
    sources = api(base, "/api/memory/sources")
    first = sources[0]
    allocs = api(base, "/api/memory/allocations", run=first["run"], rank=first["rank"], device=first["device"])
    assert allocs["total_count"] == first["count"] and allocs["allocations"]
    assert any(a["free"] is None for a in allocs["allocations"])  # weights live to the end
    op = api(base, "/api/op_at", run=first["run"], rank=first["rank"], ts=allocs["allocations"][-1]["alloc"])
    assert op["layer"] == "framework"
    series = api(base, "/api/memory/series")["series"]
    assert all(s["peak"]["bytes"] == max(s["bytes"]) for s in series)


def test_summary(base: str) -> None:
    sections = {s["name"]: s for s in api(base, "/api/summary")["analyses"]}
    assert list(sections) == [a.name for a in ANALYSES]  # the same analyses as `kinetoscope summary`
    assert {r["rank"] for r in sections["overview"]["rows"]} == {0, 1, 2, 3}
    assert sections["top_kernels"]["rows"] and sections["top_ops"]["rows"]
    assert all(0 <= c["overlap_ns"] <= c["communication_ns"] for c in sections["communication_overlap"]["rows"])


def test_hostile_names_are_plain_data(base: str) -> None:
    found = api(base, "/api/search", q="onerror=alert(1)>")
    assert found["total"] > 0 and found["hits"][0]["name"] == HOSTILE_NAME


@pytest.mark.parametrize("sql", [
    "DROP VIEW events", "COPY (SELECT 1) TO '/tmp/x.csv'", "SELECT 1; SELECT 2", "PRAGMA version",
    "INSTALL httpfs", "ATTACH '/tmp/x.db' AS x", "SELECT * FROM read_csv('/etc/passwd')",
])
def test_sql_rejects_everything_but_one_read_only_select(base: str, sql: str) -> None:
    status, body, _ = fetch(f"{base}/api/sql", data=json.dumps({"q": sql}).encode())
    assert status == 400, body
    assert json.loads(body)["error"]


def test_sql_select_and_csv(base: str) -> None:
    status, body, _ = fetch(f"{base}/api/sql", data=json.dumps(
        {"q": "WITH k AS (SELECT * FROM events WHERE layer = 'device') SELECT rank, count(*) n, max(ts_ns) t"
              " FROM k GROUP BY rank ORDER BY rank"}).encode())
    result = json.loads(body)
    assert status == 200 and result["columns"] == ["rank", "n", "t"] and len(result["rows"]) == 4
    assert isinstance(result["rows"][0][2], str)  # epoch ns beyond 2**53 keep every digit
    status, csv, headers = fetch(f"{base}/api/sql.csv?q=" + urllib.request.quote("SELECT 1 AS a, 'x' AS b"))
    assert status == 200 and csv.decode().splitlines() == ["a,b", "1,x"]
    assert "attachment" in headers["Content-Disposition"]


def test_sql_start_says_the_worker_runs(base: str) -> None:
    status, body, _ = fetch(f"{base}/api/sql/start", data=b"{}")
    assert status == 200 and json.loads(body) == {"started": True}


@pytest.mark.parametrize("path", [
    "/static/../../../../etc/passwd", "/static/%2e%2e/%2e%2e/%2e%2e/etc/passwd", "/static/..%2f..%2fapp.py",
    "/static//etc/passwd", "/../../etc/passwd", "/static/%2e%2e%2f_dataset.json",
])
def test_nothing_outside_the_package_is_served(base: str, path: str) -> None:
    import http.client

    conn = http.client.HTTPConnection(base.removeprefix("http://"))
    conn.request("GET", path)
    response = conn.getresponse()
    body = response.read()
    assert response.status in (400, 404), (path, response.status)
    assert b"root:" not in body and b"schema_version" not in body


def test_page_carries_a_strict_content_security_policy(base: str) -> None:
    status, body, headers = fetch(base + "/")
    assert status == 200 and b"/static/app.js" in body
    assert "script-src 'self'" in headers["Content-Security-Policy"]


def test_unexpected_host_header_is_refused(base: str) -> None:
    status, _, _ = fetch(base + "/api/meta", headers={"Host": "evil.example:80"})
    assert status == 403

"""`kinetoscope view` listens before it prepares the dataset: the URL at once, progress, then the API."""

from __future__ import annotations

import json
import shutil
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from ..ingest.helpers import DATA
from ..viewer.helpers import sign_in
from .test_view_cli import serve, status_of

STAGE_ORDER = ["import", "ingest", "index", "ready"]


def fetch(url: str, headers: dict[str, str] | None = None) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers or {}), timeout=30) as response:
            return int(response.status), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_view_prints_the_url_before_the_dataset_is_ready_and_reports_each_stage(tmp_path: Path) -> None:
    """Eight raw DLRM traces: imported, ingested and indexed while the server already answers."""
    traces = shutil.copytree(DATA / "dlrm_8rank", tmp_path / "dlrm_8rank")
    proc, url = serve(traces)
    try:
        base, session = sign_in(url)
        first_status, first = fetch(base + "api/progress", session)
        assert first_status == 200 and first["ready"] is False and first["stage"] in STAGE_ORDER[:3]
        assert status_of(base) == 200  # the page itself, at once
        meta_status, body = fetch(base + "api/meta", session)
        assert meta_status == 503 and json.loads(body)["loading"] is True
        seen = [first]
        deadline = time.monotonic() + 120
        while not seen[-1]["ready"] and time.monotonic() < deadline:
            time.sleep(0.05)
            seen.append(fetch(base + "api/progress", session)[1])
        stages = [s["stage"] for s in seen]
        assert "error" not in stages and stages[-1] == "ready", seen[-1]
        assert [STAGE_ORDER.index(s) for s in stages] == sorted(STAGE_ORDER.index(s) for s in stages)
        assert {"ingest", "index"} <= set(stages)
        ingest = [s for s in seen if s["stage"] == "ingest" and s["total"]]
        sessions = [s for s in ingest if not s["unit"]]  # sessions ended; "%": a trace's bytes read
        assert all(s["total"] == 8 and 0 <= s["done"] <= 8 for s in sessions)
        reading = [s for s in ingest if s["unit"] == "%"]
        assert all(0 <= s["done"] <= s["total"] == 8000 and s["message"].startswith("reading ") for s in reading)
        shares = [s["done"] / s["total"] for s in ingest]
        assert shares == sorted(shares)  # the bar only moves on, through the sessions and their bytes
        assert sessions or reading
        time.sleep(0.3)
        assert fetch(base + "api/progress", session)[1]["elapsed_s"] == seen[-1]["elapsed_s"]  # stopped
        meta_status, meta = fetch(base + "api/meta", session)
        assert meta_status == 200 and len(meta["sessions"]) == 8 and meta["event_count"] > 0
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_the_loading_routes_keep_the_session_host_and_origin_checks(tmp_path: Path) -> None:
    traces = shutil.copytree(DATA / "dlrm_8rank", tmp_path / "dlrm_8rank")
    proc, url = serve(traces)
    try:
        base, session = sign_in(url)
        port = base.rsplit(":", 1)[1].strip("/")
        assert fetch(base + "api/progress")[0] == 401
        assert fetch(base + "api/meta")[0] == 401
        assert fetch(base + "api/progress", session)[0] == 200
        assert fetch(base + "api/progress", {**session, "Origin": "http://evil.example"})[0] == 403
        assert fetch(base + "api/progress", {**session, "Host": f"evil.example:{port}"})[0] == 403
        assert fetch(base + "api/progress", {**session, "Sec-Fetch-Site": "cross-site"})[0] == 403
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_a_failure_while_preparing_is_reported_on_the_page_and_printed(tmp_path: Path) -> None:
    """A trace that is not JSON: the URL still comes, and /api/progress says what went wrong."""
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "rank0.pt.trace.json").write_text("{ this is not json")
    head: list[str] = []  # the failure may be printed before the URL: preparing runs beside serving
    proc, url = serve(bad, head=head)
    try:
        base, session = sign_in(url)
        deadline = time.monotonic() + 60
        state = fetch(base + "api/progress", session)[1]
        while state["stage"] != "error" and not state["ready"] and time.monotonic() < deadline:
            time.sleep(0.05)
            state = fetch(base + "api/progress", session)[1]
        assert state["stage"] == "error" and state["error"], state
        assert fetch(base + "api/meta", session)[0] == 503
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    assert "preparing the dataset failed" in "".join(head) + out

"""The index build reports how far it is (`ViewerIndex.open(progress=...)`), and `kinetoscope view`'s
loading app serves a preview until the whole dataset is ready."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import shutil
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message

from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import STEP_WEIGHTS, ViewerIndex
from kinetoscope.viewer.serving.loading import Preparation, create_loading_app


def test_the_build_reports_each_step_in_per_cent_up_to_100(multirank_dir: Path, tmp_path: Path) -> None:
    copy = Path(shutil.copytree(multirank_dir, tmp_path / "ds", ignore=shutil.ignore_patterns("_viewer")))
    seen: list[tuple[int, int, str]] = []
    ViewerIndex.open(Dataset(copy), progress=lambda done, total, step: seen.append((done, total, step))).close()
    dones = [done for done, _, _ in seen]
    assert {total for _, total, _ in seen} == {100}
    assert dones == sorted(dones) and dones[0] == 0 and dones[-1] == 100 and max(dones[:-1]) < 100
    steps = [step for _, _, step in seen]
    assert steps[:2] == ["numbering the tracks", "reading the events"] and steps[-1] == "index written"
    assert len(steps) >= len(STEP_WEIGHTS) - 1  # each step (the pyramid only for a large dataset)
    again: list[tuple[int, int, str]] = []
    ViewerIndex.open(Dataset(copy), progress=lambda *a: again.append(a)).close()
    assert again == []  # an index already built is opened, not built


class Client:
    """GET requests straight into an ASGI app (no server, no network)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    def get(self, path: str) -> tuple[int, bytes]:
        # a thread of its own: an open Playwright (the browser tests') marks a loop as running in this one
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, self._get(path)).result()

    def json(self, path: str) -> Any:
        status, body = self.get(path)
        assert status == 200, body
        return json.loads(body)

    def text(self, path: str) -> str:
        return self.get(path)[1].decode()

    async def _get(self, path: str) -> tuple[int, bytes]:
        scope = {"type": "http", "method": "GET", "path": path, "raw_path": path.encode(), "query_string": b"",
                 "headers": [(b"host", b"127.0.0.1:8700")], "scheme": "http", "server": ("127.0.0.1", 8700),
                 "client": ("127.0.0.1", 5000), "http_version": "1.1", "root_path": ""}
        sent: list[Message] = []

        async def receive() -> Message:
            return {"type": "http.request", "body": b"", "more_body": False}

        async def send(message: Message) -> None:
            sent.append(message)

        await self.app(scope, receive, send)
        status = next(int(m["status"]) for m in sent if m["type"] == "http.response.start")
        return status, b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def _answering(text: str) -> Starlette:
    async def meta(request: Request) -> Response:
        return PlainTextResponse(text)

    return Starlette(routes=[Route("/api/meta", meta)])


def test_a_preview_answers_until_the_whole_is_ready() -> None:
    preparation = Preparation()
    client = Client(create_loading_app(preparation))
    assert client.get("/api/meta")[0] == 503
    about = {"trace": "rank0.pt.trace.json", "trace_bytes": 10, "ranks": [0], "events": 3, "span_ns": 5}
    preparation.report("ingest", message="ingesting")
    preparation.show_preview(_answering("preview"), about)
    assert client.text("/api/meta") == "preview"
    progress = client.json("/api/progress")
    assert progress["preview"] == about and progress["ready"] is False and progress["stage"] == "ingest"
    preparation.report("index", 43, 100, "sorting", unit="%")
    assert client.json("/api/progress")["unit"] == "%"
    preparation.run(lambda: _answering("whole"))
    assert client.text("/api/meta") == "whole"
    progress = client.json("/api/progress")
    assert progress["ready"] is True and progress["preview"] is None


def test_a_preview_after_the_whole_is_ready_is_not_shown() -> None:
    preparation = Preparation()
    preparation.run(lambda: _answering("whole"))
    preparation.show_preview(_answering("preview"), {"trace": "late"})
    client = Client(create_loading_app(preparation))
    assert client.text("/api/meta") == "whole" and client.json("/api/progress")["preview"] is None

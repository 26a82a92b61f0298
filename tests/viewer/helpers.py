"""Helpers for viewer tests: a server on a free local port in a background thread, and browser launch."""

from __future__ import annotations

import json
import os
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.serving.access import Access
from kinetoscope.viewer.serving.app import create_app
from kinetoscope.viewer.serving.pairing import ComparePair
from kinetoscope.viewer.serving.server import bind

CHROMIUM = Path(os.environ.get("KINETOSCOPE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "viewer"


@contextmanager
def running_server(index: ViewerIndex, *, host: str = "127.0.0.1", access: Access | None = None,
                   check_host: bool = True, pair: ComparePair | None = None) -> Iterator[str]:
    """Serves `index` (with `pair`: compare mode, `index` its BASE) until the block ends; yields the
    base URL (without code). `access`: sign-in required (None: none)."""
    sock = bind(host, 0, prefer_default=False)
    port = sock.getsockname()[1]
    hosts = frozenset({f"127.0.0.1:{port}", f"localhost:{port}"}) if check_host else None
    app = create_app(index, access=access, allowed_hosts=hosts, pair=pair)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    while not server.started:
        threading.Event().wait(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


def exchange(base: str, code: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, object]]:
    """POSTs `code` to ``/api/session``: the status and the JSON answer."""
    request = urllib.request.Request(base.rstrip("/") + "/api/session", data=json.dumps({"code": code}).encode(),
                                     method="POST", headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status), dict(json.loads(response.read()))
    except urllib.error.HTTPError as exc:
        body = exc.read()
        return exc.code, dict(json.loads(body)) if body.startswith(b"{") else {"text": body.decode()}


def sign_in(link: str) -> tuple[str, dict[str, str]]:
    """What a page does with a printed link: the viewer's base URL (ending in /) and the session
    header its one-time code is exchanged for."""
    parts = urllib.parse.urlsplit(link)
    base = f"{parts.scheme}://{parts.netloc}/"
    status, answer = exchange(base, urllib.parse.parse_qs(parts.query)["code"][0])
    assert status == 200, answer
    return base, {"X-Kinetoscope-Session": str(answer["session"])}

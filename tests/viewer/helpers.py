"""Helpers for viewer tests: a server on a free local port in a background thread, and browser launch."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from kinetoscope.viewer.app import create_app
from kinetoscope.viewer.index import ViewerIndex
from kinetoscope.viewer.pairing import ComparePair
from kinetoscope.viewer.server import bind

CHROMIUM = Path(os.environ.get("KINETOSCOPE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts" / "viewer"


@contextmanager
def running_server(index: ViewerIndex, *, host: str = "127.0.0.1", token: str | None = None,
                   check_host: bool = True, pair: ComparePair | None = None) -> Iterator[str]:
    """Serves `index` (with `pair`: compare mode, `index` its BASE) until the block ends; yields the
    base URL (without token)."""
    sock = bind(host, 0, prefer_default=False)
    port = sock.getsockname()[1]
    hosts = frozenset({f"127.0.0.1:{port}", f"localhost:{port}"}) if check_host else None
    app = create_app(index, token=token, allowed_hosts=hosts, pair=pair)
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

"""The viewer while its dataset is being prepared: the page at once, progress, then the real app.

`kinetoscope view` listens before it imports, ingests and indexes. Until the dataset's app is
ready, ``/`` and ``/static`` serve the normal page (which polls ``/api/progress`` and shows a
progress bar), and every other API route answers 503 ``{"loading": true, ...}``; or, once a
preview of the first events is ready (`Preparation.show_preview`), the preview's app answers
them and ``/api/progress`` describes it under ``preview``. Once ready, every request but
``/api/progress`` goes to the dataset's app. The session, Host and Origin checks
(`app.Guard`) apply to all of them.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from kinetoscope.viewer.serving.access import Access
from kinetoscope.viewer.serving.app import STATIC_DIR, Guard, json_response
from kinetoscope.viewer.serving.pairing import NEW_PREFIX

STAGES = ("import", "ingest", "index", "ready", "error")


@dataclass
class Progress:
    """Where preparation stands. `total` 0: the stage's amount of work is not known."""

    stage: str = "import"
    done: int = 0
    total: int = 0
    message: str = "starting"
    error: str | None = None
    started_s: float = field(default_factory=time.monotonic)
    ended_s: float | None = None  # when it became ready or failed: elapsed_s stops there
    unit: str = ""  # what done and total count: "" (sessions, files), "%" (per cent of the stage)


class Preparation:
    """The progress reported by the preparing thread and, once ready, the dataset's app."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._progress = Progress()
        self.app: Starlette | None = None
        self.preview_app: Starlette | None = None
        self._preview: dict[str, Any] | None = None
        self._on_close: list[Callable[[], object]] = []
        self._preview_over = threading.Event()  # the whole's heavy work waits for it (`wait_for_preview`)
        self._preview_over.set()  # no preview coming unless `expect_preview` says one is

    def on_close(self, action: Callable[[], object]) -> None:
        """Runs `action` when the server stops (after the apps' own shutdown), last added first."""
        with self._lock:
            self._on_close.append(action)

    def close(self) -> None:
        with self._lock:
            actions, self._on_close = self._on_close[::-1], []
        for action in actions:
            try:
                action()
            except Exception as exc:  # noqa: BLE001 - each clean-up runs, whatever the others do
                print(f"kinetoscope view: while stopping: {exc}", file=sys.stderr, flush=True)

    def report(self, stage: str, done: int = 0, total: int = 0, message: str = "", unit: str = "") -> None:
        with self._lock:
            self._progress = Progress(stage, done, total, message, None, self._progress.started_s, unit=unit)

    def show_preview(self, app: Starlette, about: dict[str, Any]) -> None:
        """Serves `app` (a preview of the first events, described by `about`) until ready."""
        with self._lock:
            if self._progress.stage not in ("ready", "error"):
                self.preview_app, self._preview = app, about

    def expect_preview(self) -> None:
        """A preview is being prepared: `wait_for_preview` waits until `preview_over`."""
        self._preview_over.clear()

    def preview_over(self) -> None:
        """The preview answers, failed, or was not wanted: the whole's work may start."""
        self._preview_over.set()

    def wait_for_preview(self, limit_s: float) -> bool:
        """Waits, at most `limit_s`, for the preview to be over (so its child has the CPU to
        itself); whether it was."""
        return self._preview_over.wait(limit_s)

    def settled(self) -> bool:
        """Whether the preparation is over (ready or failed)."""
        with self._lock:
            return self._progress.stage in ("ready", "error")

    def run(self, prepare: Callable[[], Starlette]) -> None:
        """Calls `prepare` (in this thread); its app, or its error, ends the preparation."""
        try:
            app = prepare()
        except Exception as exc:  # noqa: BLE001 - any failure is shown on the page and printed
            self.fail(str(exc) or type(exc).__name__)
            return
        with self._lock:
            self.app = app
            self._progress = Progress("ready", 1, 1, "ready", None, self._progress.started_s, time.monotonic())

    def fail(self, message: str) -> None:
        print(f"kinetoscope view: preparing the dataset failed: {message}", file=sys.stderr, flush=True)
        with self._lock:
            self._progress = Progress("error", 0, 0, "preparing the dataset failed", message,
                                      self._progress.started_s, time.monotonic())

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            state = asdict(self._progress)
            preview = None if state["stage"] == "ready" else self._preview
        started, ended = state.pop("started_s"), state.pop("ended_s")
        elapsed_s = (ended or time.monotonic()) - started
        return {**state, "ready": state["stage"] == "ready", "elapsed_s": round(elapsed_s, 1), "preview": preview}


def _pending_app() -> Starlette:
    """What answers before the dataset's app is ready: the page, its files, 503 for the API."""

    async def page(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"Cache-Control": "no-cache"})

    async def not_yet(request: Request) -> Response:
        path = request.url.path
        if path.startswith(("/api/", f"{NEW_PREFIX}/api/")):
            return json_response({"loading": True, "error": "the dataset is still being prepared: see /api/progress"},
                                 status=503)
        return PlainTextResponse("Not Found", status_code=404)

    return Starlette(routes=[Route("/", page), Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
                             Route("/{rest:path}", not_yet, methods=["GET", "POST", "HEAD"])])


class _Switch:
    """Hands each request to the dataset's app once there is one, else to the preview's, else to
    the pending app."""

    def __init__(self, preparation: Preparation) -> None:
        self.preparation = preparation
        self.pending = _pending_app()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        target: ASGIApp = self.preparation.app or self.preparation.preview_app or self.pending
        await target(scope, receive, send)


def create_loading_app(preparation: Preparation, *, access: Access | None = None,
                       allowed_hosts: frozenset[str] | None = None) -> Starlette:
    """The app `kinetoscope view` serves from the start (`access`, `allowed_hosts`: as `create_app`)."""

    async def progress(request: Request) -> Response:
        return json_response(preparation.snapshot())

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        for ready in (preparation.app, preparation.preview_app):
            if ready is not None:  # its own shutdown: the SQL worker processes go with the server
                async with ready.router.lifespan_context(ready):
                    pass
        preparation.close()

    return Starlette(routes=[Route("/api/progress", progress), Mount("", app=_Switch(preparation))],
                     middleware=[Middleware(Guard, access=access, allowed_hosts=allowed_hosts)], lifespan=lifespan)

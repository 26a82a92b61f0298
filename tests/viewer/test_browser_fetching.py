"""When a move of the timeline's view asks the server for a new window (web/src/timeline/fetching.ts), driven
in Chromium: one zoom step or a short pan draws from the window already fetched, at once; two zoom steps
from the window fetched ahead once the view rested."""

from __future__ import annotations

from typing import Any

import pytest

from .test_browser import api, idle, open_view, view_range

pytestmark = pytest.mark.slow


def _windows_asked(page: Any, key: str, *, ahead: bool = False) -> int:
    """Presses `key` and counts the window requests it makes until the page is idle: those for the view, or
    (`ahead`) those fetched ahead of it (`ahead=1`)."""
    asked: list[str] = []

    def seen(request: Any) -> None:
        if "/api/window" in request.url and ("ahead=1" in request.url) == ahead:
            asked.append(request.url)

    page.on("request", seen)
    before = view_range(page)
    page.keyboard.press(key)
    idle(page)
    page.wait_for_timeout(200)
    idle(page)
    page.remove_listener("request", seen)
    assert view_range(page) != before  # the view moved
    return len(asked)


def test_one_zoom_step_or_a_short_pan_draws_from_the_window_already_fetched(page: Any, server: str) -> None:
    span = api(server, "/api/meta")["span_ns"]
    open_view(page, f"{server}/?start={span // 4}&end={span // 2}")
    page.locator("canvas.tl-canvas").focus()
    # WHEN the view zooms in one step (W) THEN the window fetched for the view before serves it: no request
    assert _windows_asked(page, "w") == 0
    # WHEN it zooms in a second step THEN its pixels are too fine for that window, but the window fetched
    # ahead two steps in (once the view rested) serves it: no request for the view
    assert _windows_asked(page, "w") == 0
    # WHEN it pans by 15 % (D) THEN it is still inside the new window (a quarter of the view past each side)
    assert _windows_asked(page, "d") == 0
    assert _windows_asked(page, "d") == 1


def test_two_zoom_steps_draw_from_the_window_fetched_ahead_and_fetch_ahead_again(page: Any, server: str) -> None:
    span = api(server, "/api/meta")["span_ns"]
    open_view(page, f"{server}/?start={span // 4}&end={span // 2}")
    page.locator("canvas.tl-canvas").focus()
    # WHEN the view zooms in two steps at once (W W) THEN no window is asked for it: the one fetched ahead
    # serves it; once drawn, the windows two steps in and out of the new view are fetched ahead
    asked, ahead = [], []
    page.on("request", lambda r: "/api/window" in r.url and (ahead if "ahead=1" in r.url else asked).append(r.url))
    page.keyboard.press("w")
    page.keyboard.press("w")
    idle(page)
    page.wait_for_timeout(200)
    idle(page)
    assert asked == [] and len(ahead) == 2
    # WHEN it zooms out two steps (S S) THEN the window fetched ahead serves that too
    asked.clear()
    page.keyboard.press("s")
    page.keyboard.press("s")
    idle(page)
    assert asked == []

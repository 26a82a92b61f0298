"""When a move of the timeline's view asks the server for a new window (web/src/timeline/fetching.ts), driven
in Chromium: one zoom step or a short pan draws from the window already fetched, at once."""

from __future__ import annotations

from typing import Any

import pytest

from .test_browser import api, idle, open_view, view_range

pytestmark = pytest.mark.slow


def _windows_asked(page: Any, key: str) -> int:
    """Presses `key` and counts the window requests it makes once the page is idle."""
    asked: list[str] = []

    def seen(request: Any) -> None:
        if "/api/window" in request.url:
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
    # WHEN it zooms in a second step THEN its pixels are too fine for that window: it is fetched anew
    assert _windows_asked(page, "w") == 1
    # WHEN it pans by 15 % (D) THEN it is still inside the new window (a quarter of the view past each side)
    assert _windows_asked(page, "d") == 0
    assert _windows_asked(page, "d") == 1

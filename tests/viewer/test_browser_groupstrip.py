"""A folded group's header draws a busy strip of its tracks, driven in Chromium (screenshots in
artifacts/viewer/)."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

import pytest

from . import test_browser
from .test_browser import api, idle, open_view, shot

pytestmark = pytest.mark.slow
browser, page, server = test_browser.browser, test_browser.page, test_browser.server  # the same fixtures

STRIP = (37, 99, 235)


def _header_pixels(page: Any, group: str, xs: list[float], dy: int = 5) -> list[list[int]]:
    """The canvas colour `dy` px below the top of `group`'s header row at each x (CSS pixels)."""
    return page.evaluate("""([group, xs, dy]) => {
      const headers = [...document.querySelectorAll('.label.group')];
      const header = headers.find((l) => l.querySelector('.name').textContent === group);
      const canvas = document.querySelector('.tl-canvas');
      const dpr = window.devicePixelRatio || 1;
      const y = Number(header.dataset.y) - document.querySelector('.tl-scroll').scrollTop + dy;
      const ctx = canvas.getContext('2d');
      return xs.map((x) => [...ctx.getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data.slice(0, 3)]);
    }""", [group, xs, dy])


def _idle_time(server: str, tracks: list[int], after_ns: int, before_ns: int, px_ns: float) -> float:
    """A time between the two at which a pixel-wide window holds no event of `tracks` (asked of /api/window)."""
    ids = ",".join(map(str, tracks))
    at = after_ns + 2 * px_ns
    while at < before_ns - 2 * px_ns:
        w = api(server, f"/api/window?start={int(at - 2 * px_ns)}&end={int(at + 2 * px_ns)}&px=4&tracks={ids}")
        if not w["slices"]["id"] and not w["blocks"]["track"]:
            return at
        at += px_ns
    raise AssertionError("no idle time between the steps")


def test_a_folded_group_header_shows_when_its_tracks_are_busy(page: Any, server: str) -> None:
    group = "rank 1 · pid 4010"
    tracks = [t["id"] for t in api(server, "/api/meta")["tracks"] if t["rank"] == 1]
    step0, step1 = (api(server, "/api/search?q=" + quote(f"ProfilerStep#{n} rank:1"))["hits"][0] for n in (0, 1))
    span_ns = api(server, "/api/meta")["span_ns"]
    open_view(page, f"{server}/?start=0&end={span_ns}")
    width = page.locator(".tl-canvas").bounding_box()["width"]
    px_ns = span_ns / width
    idle_ns = _idle_time(server, tracks, step0["ts"] + step0["dur"], step1["ts"], px_ns)
    xs = [(step1["ts"] + step1["dur"] / 2) / px_ns, idle_ns / px_ns]
    # GIVEN the group unfolded THEN its header is plain
    assert all(tuple(p) != STRIP for p in _header_pixels(page, group, xs))
    # WHEN it is folded THEN its header draws the strip: full height while a step runs, nothing where
    # none of its tracks has an event
    page.locator(".label.group").filter(has_text=group).click()
    idle(page)
    busy, empty = _header_pixels(page, group, xs)
    assert tuple(busy) == STRIP
    assert tuple(empty) != STRIP and tuple(_header_pixels(page, group, xs[1:], dy=23)[0]) != STRIP
    assert tuple(_header_pixels(page, group, xs[:1], dy=23)[0]) == STRIP
    shot(page, "folded-group-strip")
    # AND unfolding it again takes the strip away
    page.locator(".label.group").filter(has_text=group).click()
    idle(page)
    assert all(tuple(p) != STRIP for p in _header_pixels(page, group, xs))

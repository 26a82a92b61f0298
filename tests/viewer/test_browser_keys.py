"""Keys and clicks that keep the user's place: the palette's track names match numbers whole, search
stepping keeps the zoom, one Ctrl+wheel notch zooms a bounded step, a click shows the Details tab
(Chromium, the four-rank dataset)."""

from __future__ import annotations

from typing import Any

import pytest

from .test_browser import api, click_event, idle, open_view, view_range

pytestmark = pytest.mark.slow


def _span(page: Any) -> float:
    start, end = view_range(page)
    return end - start


def test_palette_track_numbers_match_whole(page: Any, server: str) -> None:
    open_view(page, server + "/")
    page.keyboard.press("Control+k")
    page.keyboard.type("rank 3 stream 13")
    first = page.locator(".palette-list li").first.inner_text()
    assert "rank 3 ·" in first, first  # not rank 0's stream 13, whose "13" holds a "3"
    page.keyboard.press("Enter")
    found = page.locator(".label.slice.found")
    found.wait_for()
    assert "stream 13" in found.inner_text()


def test_search_stepping_keeps_the_zoom(page: Any, server: str) -> None:
    hit = api(server, "/api/search?q=aten%3A%3Aaddmm%20rank%3A0")["hits"][0]
    open_view(page, f"{server}/?start={hit['ts'] - 2_000_000}&end={hit['ts'] + 3_000_000}")
    before = _span(page)
    page.fill("input[type=search]", "aten::addmm rank:0")
    page.keyboard.press("Enter")
    idle(page)
    page.keyboard.press("Enter")
    idle(page)
    assert page.locator(".search-count").inner_text().startswith("hit 2 of ")
    assert _span(page) == pytest.approx(before, rel=1e-6)


def test_one_ctrl_wheel_notch_zooms_a_bounded_step(page: Any, server: str) -> None:
    open_view(page, server + "/")
    page.mouse.click(10, 10)  # nothing focused in the timeline's way
    box = page.locator("canvas.tl-canvas").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + 100)
    page.keyboard.press("w")  # zoomed in first, so that zooming out is not cut at the whole run
    page.keyboard.press("w")
    idle(page)
    before = _span(page)
    page.keyboard.down("Control")
    page.mouse.wheel(0, 100)
    page.keyboard.up("Control")
    idle(page)
    assert 1.2 <= _span(page) / before <= 1.5


def test_a_click_shows_the_details_tab(page: Any, server: str) -> None:
    hit = api(server, "/api/search?q=aten%3A%3Aaddmm%20rank%3A0")["hits"][1]
    open_view(page, f"{server}/?start={hit['ts'] - 40_000}&end={hit['ts'] + 60_000}&q=aten%3A%3Aaddmm")
    page.locator('.drawer-tabs button[data-tab="search"]').click()
    click_event(page, hit)
    assert page.locator(".side-tabs button.active").get_attribute("data-tab") == "details"

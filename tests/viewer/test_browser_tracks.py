"""Track control: filter, pin, hide, lane limit, the track finder and sticky group headers, driven in
Chromium (screenshots in artifacts/viewer/)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from .test_browser import ROW_PAD, SLICE_H, api, click_event, idle, open_view, shot

pytestmark = pytest.mark.slow


def _param(page: Any, key: str) -> str:
    return parse_qs(urlparse(page.url).query).get(key, [""])[0]


def _names(page: Any) -> list[str]:
    return page.locator(".label.slice .name, .label.counter .name").all_inner_texts()


def _limit_lanes(page: Any) -> None:
    """WHEN the lane limit is 2 THEN a Python thread (many lanes) is two lanes high, and its label says so."""
    def thread() -> Any:
        return page.locator(".label.slice").filter(has_text="(python3)").first

    tall = thread().bounding_box()["height"]
    page.select_option("select.lane-limit", "2")
    idle(page)
    assert tall > 2 * SLICE_H + 2 * ROW_PAD
    assert thread().bounding_box()["height"] == 2 * SLICE_H + 2 * ROW_PAD
    assert "2/" in thread().inner_text()
    assert _param(page, "lanes") == "2"


def _pinned_stays(page: Any, key: str) -> None:
    """THEN the pinned track stays at the top while the others scroll under it, the next group's name below it."""
    pinned_y = page.locator(f'.label[data-key="{key}"]').bounding_box()["y"]
    page.locator(".tl-scroll").evaluate("el => { el.scrollTop = 700; }")
    idle(page)
    assert abs(page.locator(f'.label[data-key="{key}"]').bounding_box()["y"] - pinned_y) < 1
    sticky = page.locator(".sticky-group")
    assert sticky.is_visible() and sticky.bounding_box()["y"] >= pinned_y + SLICE_H
    shot(page, "tracks-pinned-scrolled")
    page.locator(".tl-scroll").evaluate("el => { el.scrollTop = 0; }")
    idle(page)


def test_tracks_are_filtered_pinned_hidden_limited_found_and_linked(page: Any, server: str) -> None:
    open_view(page, server + "/")
    everything = _names(page)
    # WHEN the filter says "stream" THEN only stream tracks are listed, and the link keeps it
    page.fill("input.track-filter", "stream")
    idle(page)
    assert _names(page) and all("stream" in n for n in _names(page)) and len(_names(page)) < len(everything)
    assert _param(page, "tfilter") == "stream"
    page.fill("input.track-filter", "")
    idle(page)
    assert _names(page) == everything
    # WHEN rank 1's first stream is pinned THEN it leads the list, in a "pinned" group
    stream = page.locator(".label.slice").filter(has_text="stream 7").nth(1)
    key = stream.get_attribute("data-key")
    stream.hover()
    stream.locator("button.pin").click()
    idle(page)
    assert page.locator(".label.group .name").first.inner_text() == "pinned"
    assert page.locator(".label.slice").first.get_attribute("data-key") == key
    assert "rank 1" in page.locator(".label.slice .name").first.inner_text()
    assert _param(page, "pin") == key
    _pinned_stays(page, key)
    # WHEN a track is hidden THEN it is gone until "show hidden"
    runtime = page.locator(".label.slice").filter(has_text="runtime").first
    hidden = runtime.get_attribute("data-key")
    runtime.hover()
    runtime.locator("button.hide").click()
    idle(page)
    assert page.locator(f'.label[data-key="{hidden}"]').count() == 0 and _param(page, "hide") == hidden
    assert page.locator("button.show-hidden").inner_text() == "show 1 hidden"
    _limit_lanes(page)
    shot(page, "tracks-pinned-limited")
    # WHEN the finder is given a track of rank 1 THEN the view scrolls to it and the sticky header names its rank
    page.fill("input.track-finder", "rank 1 · pid 4010 · stream 13")
    page.keyboard.press("Enter")
    idle(page)
    found = page.locator(".label.found")
    assert found.count() == 1 and "stream 13" in found.inner_text()
    scroller = page.locator(".tl-scroll").bounding_box()
    box = found.bounding_box()
    assert scroller["y"] <= box["y"] <= scroller["y"] + scroller["height"]
    sticky = page.locator(".sticky-group")
    assert sticky.is_visible() and sticky.inner_text() == "rank 1 · pid 4010"
    shot(page, "tracks-finder-sticky")
    # AND reloading the link restores the pin, the hidden track and the lane limit
    page.reload()
    idle(page)
    assert page.locator(".label.slice").first.get_attribute("data-key") == key
    assert page.locator(f'.label[data-key="{hidden}"]').count() == 0
    assert page.locator("select.lane-limit").input_value() == "2"
    page.locator("button.show-hidden").click()
    idle(page)
    assert page.locator(f'.label[data-key="{hidden}"]').count() == 1 and _param(page, "hide") == ""


def test_hiding_python_frames_draws_ops_at_their_depth_among_ops(page: Any, server: str) -> None:
    # GIVEN an aten::addmm on rank 0's main thread, which holds Python frames
    hit = api(server, "/api/search?q=aten%3A%3Aaddmm%20rank%3A0")["hits"][1]
    track = next(t for t in api(server, "/api/meta")["tracks"] if t["id"] == hit["track"])
    brief = api(server, f"/api/event/{hit['id']}")
    assert 0 < track["ops_lanes"] < track["lanes"] and 0 <= brief["ops_lane"] < brief["lane"]
    open_view(page, f"{server}/?start={hit['ts'] - 40_000}&end={hit['ts'] + 60_000}")
    # WHEN Python frames are hidden THEN the thread is as many lanes high as its ops need, and the link says so
    page.check("input.hide-python")
    idle(page)
    label = page.locator(f'.label[data-track="{track["id"]}"]')
    assert label.bounding_box()["height"] == track["ops_lanes"] * SLICE_H + 2 * ROW_PAD
    assert _param(page, "nopy") == "1"
    shot(page, "tracks-without-python-frames")
    # AND the op is drawn (and clicked) in its lane among ops
    click_event(page, {**hit, "lane": brief["ops_lane"]})
    assert page.locator(".panel .event-name").inner_text() == "aten::addmm"
    page.reload()
    idle(page)
    assert page.locator("input.hide-python").is_checked()
    assert label.bounding_box()["height"] == track["ops_lanes"] * SLICE_H + 2 * ROW_PAD

"""Dragging a track's name to reorder the tracks of its group, kept in the deep link; driven in
Chromium (screenshots in artifacts/viewer/)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from .test_browser import idle, open_view, shot

pytestmark = pytest.mark.slow


def _group_names(page: Any, group: str) -> list[str]:
    """The track names under the header `group`, top to bottom, up to the next header."""
    return page.evaluate("""(group) => {
      const labels = [...document.querySelectorAll('.tl-labels .label')].sort((a, b) => a.dataset.y - b.dataset.y);
      const name = (l) => l.querySelector('.name').textContent;
      const isHeader = (l) => l.classList.contains('group');
      const start = labels.findIndex((l) => isHeader(l) && name(l) === group);
      const out = [];
      for (const l of labels.slice(start + 1)) { if (isHeader(l)) break; out.push(name(l)); }
      return out;
    }""", group)


def test_dragging_a_track_name_reorders_its_group_and_the_link_keeps_it(page: Any, server: str) -> None:
    open_view(page, server + "/")
    before = _group_names(page, "rank 0 · pid 4000")
    assert before[0] == "device 0 · busy %" and "thread 4000 (python3)" in before  # the GPU first
    other = _group_names(page, "rank 1 · pid 4010")
    # WHEN rank 0's main thread is dragged onto the top half of its first track (the device's busy row)
    group0 = page.locator(".label.slice").filter(has_text="thread 4000 (python3)").first
    first = page.locator(".label.busy").first
    group0.locator(".name").drag_to(first, target_position={"x": 30, "y": 3})
    idle(page)
    # THEN it leads rank 0's tracks, the rest in their old order, and rank 1 is as it was
    after = _group_names(page, "rank 0 · pid 4000")
    assert after == ["thread 4000 (python3)"] + [n for n in before if n != "thread 4000 (python3)"]
    assert _group_names(page, "rank 1 · pid 4010") == other
    # AND the order is in the link (track keys), so a reload shows the same order
    order = parse_qs(urlparse(page.url).query)["order"][0].split(",")
    assert order[0] == group0.get_attribute("data-key") and len(order) == len(before)
    shot(page, "tracks-reordered")
    open_view(page, page.url)
    assert _group_names(page, "rank 0 · pid 4000") == after
    # WHEN it is dragged onto the lower half of the last track THEN it goes to the end
    moved = page.locator(".label.slice").filter(has_text="thread 4000 (python3)").first
    last = page.locator(f'.label[data-key="{order[-1]}"]')
    moved.locator(".name").drag_to(last, target_position={"x": 30, "y": last.bounding_box()["height"] - 3})
    idle(page)
    thread = "thread 4000 (python3)"
    assert _group_names(page, "rank 0 · pid 4000") == [n for n in before if n != thread] + [thread]


def test_dragging_a_group_header_reorders_the_groups(page: Any, server: str) -> None:
    open_view(page, server + "/")
    groups = page.locator(".label.group .name").all_inner_texts()
    assert groups[:3] == ["rank 0 · pid 4000", "rank 1 · pid 4010", "rank 2 · pid 4020"]
    tracks = _group_names(page, "rank 1 · pid 4010")
    # WHEN rank 1's header is dragged onto the top half of rank 0's
    page.locator(".label.group").filter(has_text="rank 1").drag_to(
        page.locator(".label.group").filter(has_text="rank 0"), target_position={"x": 30, "y": 3})
    idle(page)
    # THEN rank 1 comes first, its tracks with it; the link keeps the order and a reload shows it
    moved = [groups[1], groups[0], *groups[2:]]
    assert page.locator(".label.group .name").all_inner_texts() == moved
    assert _group_names(page, "rank 1 · pid 4010") == tracks
    assert parse_qs(urlparse(page.url).query)["gorder"][0].count(",") == len(groups) - 1
    shot(page, "groups-reordered")
    open_view(page, page.url)
    assert page.locator(".label.group .name").all_inner_texts() == moved
    # AND a track dropped on a header does not move (tracks move only within their group)
    stream = page.locator(".label.slice").filter(has_text="stream 13").first
    rank0 = page.locator(".label.group").filter(has_text="rank 0")
    stream.locator(".name").drag_to(rank0, target_position={"x": 30, "y": 3})
    idle(page)
    assert "order" not in parse_qs(urlparse(page.url).query)
    assert page.locator(".label.group .name").all_inner_texts() == moved


SCROLLER = ".timeline .tl-scroll"


def _scroll_top(page: Any) -> float:
    return float(page.evaluate(f"() => document.querySelector('{SCROLLER}').scrollTop"))


def _hold_at(page: Any, x: float, y: float, until: str) -> None:
    """Keeps a drag's pointer at (x, y) until the JS condition `until` holds (the area scrolls meanwhile).
    The pointer is nudged by a pixel every 50 ms, as a browser repeats `dragover` while a drag rests (an
    emulated drag sends one only when the pointer moves, and delivers the last one late)."""
    page.mouse.move(x, y, steps=3)
    for i in range(200):
        if page.evaluate(until):
            return
        page.mouse.move(x, y + i % 2)
        page.wait_for_timeout(50)
    raise AssertionError(f"{until} never held")


def _rest(page: Any, x: float, y: float, ms: int) -> None:
    """Holds a drag's pointer at (x, y) for `ms`, nudged as `_hold_at` does."""
    page.mouse.move(x, y, steps=3)
    for i in range(ms // 50):
        page.mouse.move(x, y + i % 2)
        page.wait_for_timeout(50)


def test_a_drag_near_the_edge_scrolls_the_tracks_so_the_last_track_can_go_to_the_top(browser: Any, server: str) -> None:
    context = browser.new_context(viewport={"width": 1300, "height": 560})
    page = context.new_page()
    open_view(page, server + "/")
    group = "rank 0 · pid 4000"
    before = _group_names(page, group)
    area = page.locator(SCROLLER).bounding_box()
    content_h = page.evaluate(f"() => document.querySelector('{SCROLLER}').scrollHeight")
    assert content_h > 2 * area["height"]  # the tracks overflow the view
    # GIVEN the view scrolled down to rank 0's last track, its first track out of sight above
    last = page.locator(".label.slice, .label.counter").filter(has_text=before[-1]).first
    last.scroll_into_view_if_needed()
    idle(page)
    first = page.locator(".label").filter(has_text=before[0]).first
    assert first.bounding_box()["y"] + first.bounding_box()["height"] < area["y"]
    scrolled = _scroll_top(page)
    # WHEN the last track's name is dragged to the top edge of the track area and held there
    name = last.locator(".name").bounding_box()
    x = name["x"] + 20
    page.mouse.move(x, name["y"] + name["height"] / 2)
    page.mouse.down()
    page.mouse.move(x, name["y"] - 20, steps=4)
    mid = area["y"] + area["height"] / 2
    _rest(page, x, mid, 400)
    assert _scroll_top(page) == scrolled  # away from the edges nothing scrolls
    _hold_at(page, x, area["y"] + 30, f"() => document.querySelector('{SCROLLER}').scrollTop < {scrolled} - 100")
    shot(page, "tracks-drag-autoscroll")
    _hold_at(page, x, area["y"] + 6, f"() => document.querySelector('{SCROLLER}').scrollTop === 0")
    # THEN the area scrolled up to the group's first track; dropped on its upper half, the last track leads the group
    target = page.locator(".label").filter(has_text=before[0]).first.bounding_box()
    assert target["y"] >= area["y"]  # now in view
    page.mouse.move(x, target["y"] + 3, steps=2)
    page.mouse.up()
    idle(page)
    after = _group_names(page, group)
    assert after == [before[-1], *before[:-1]]
    order = parse_qs(urlparse(page.url).query)["order"][0].split(",")
    assert order[0] == last.get_attribute("data-key") and len(order) == len(before)
    shot(page, "tracks-drag-autoscroll-dropped")
    open_view(page, page.url)
    assert _group_names(page, group) == after
    context.close()


def test_a_group_header_held_at_the_top_edge_drops_where_the_pointer_rests_after_scrolling(browser: Any,
                                                                                          server: str) -> None:
    context = browser.new_context(viewport={"width": 1300, "height": 560})
    page = context.new_page()
    open_view(page, server + "/")
    groups = page.locator(".label.group .name").all_inner_texts()
    last = page.locator(".label.group").filter(has_text=groups[-1])
    last.scroll_into_view_if_needed()
    idle(page)
    area = page.locator(SCROLLER).bounding_box()
    first_y = page.locator(".label.group").filter(has_text=groups[0]).bounding_box()["y"]
    assert first_y < area["y"] - area["height"]  # rank 0's header is far above the view
    # WHEN rank 3's header is dragged to the top edge and held until the tracks stop scrolling
    box = last.locator(".name").bounding_box()
    x = box["x"] + 10
    page.mouse.move(x, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(x, box["y"] - 20, steps=4)
    _hold_at(page, x, area["y"] + 5, f"() => document.querySelector('{SCROLLER}').scrollTop === 0")
    # THEN released there, without moving on, it lands above the header now under the pointer: rank 0's
    _rest(page, x, area["y"] + 5, 150)
    page.mouse.up()
    idle(page)
    assert page.locator(".label.group .name").all_inner_texts() == [groups[-1], *groups[:-1]]
    assert parse_qs(urlparse(page.url).query)["gorder"][0].count(",") == len(groups) - 1
    shot(page, "groups-drag-autoscroll")
    context.close()

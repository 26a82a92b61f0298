"""Dragging a track's name to reorder the tracks of its group, kept in the deep link; driven in
Chromium (screenshots in artifacts/viewer/)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from . import test_browser
from .test_browser import idle, open_view, shot

pytestmark = pytest.mark.slow
browser, page, server = test_browser.browser, test_browser.page, test_browser.server  # the same fixtures


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
    assert before[0] == "thread 4000 (python3)" and "stream 13" in before
    other = _group_names(page, "rank 1 · pid 4010")
    # WHEN rank 0's "stream 13" is dragged onto the top half of its first track
    group0 = page.locator(".label.slice").filter(has_text="stream 13").first
    first = page.locator(".label.slice").filter(has_text="thread 4000 (python3)").first
    group0.locator(".name").drag_to(first, target_position={"x": 30, "y": 3})
    idle(page)
    # THEN it leads rank 0's tracks, the rest in their old order, and rank 1 is as it was
    after = _group_names(page, "rank 0 · pid 4000")
    assert after == ["stream 13"] + [n for n in before if n != "stream 13"]
    assert _group_names(page, "rank 1 · pid 4010") == other
    # AND the order is in the link (track keys), so a reload shows the same order
    order = parse_qs(urlparse(page.url).query)["order"][0].split(",")
    assert order[0] == group0.get_attribute("data-key") and len(order) == len(before)
    shot(page, "tracks-reordered")
    open_view(page, page.url)
    assert _group_names(page, "rank 0 · pid 4000") == after
    # WHEN it is dragged onto the lower half of the last track THEN it goes to the end
    moved = page.locator(".label.slice").filter(has_text="stream 13").first
    last = page.locator(f'.label[data-key="{order[-1]}"]')
    moved.locator(".name").drag_to(last, target_position={"x": 30, "y": last.bounding_box()["height"] - 3})
    idle(page)
    assert _group_names(page, "rank 0 · pid 4000") == [n for n in before if n != "stream 13"] + ["stream 13"]


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

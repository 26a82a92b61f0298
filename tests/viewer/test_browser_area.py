"""Area selection over chosen tracks, its aggregation and flamegraph, driven in Chromium
(screenshots in artifacts/viewer/)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

from .test_browser import api, idle, open_view, shot, view_range

pytestmark = pytest.mark.slow


def _area(page: Any) -> list[int]:
    return [int(x) for x in parse_qs(urlparse(page.url).query).get("area", [""])[0].split(",") if x]


def _drag_area(page: Any, first: Any, last: Any, x0: float, x1: float) -> None:
    box = page.locator("canvas.tl-canvas").bounding_box()
    a, b = first.bounding_box(), last.bounding_box()
    page.keyboard.down("Shift")
    page.mouse.move(box["x"] + x0, a["y"] + 8)
    page.mouse.down()
    page.mouse.move(box["x"] + x1, b["y"] + 8, steps=6)
    page.mouse.up()
    page.keyboard.up("Shift")
    idle(page)


def test_an_area_over_two_tracks_is_aggregated_drawn_as_a_flamegraph_and_linked(page: Any, server: str) -> None:
    # GIVEN rank 0's first thread and its runtime calls, in a view of a few ms
    open_view(page, f"{server}/?start=500000&end=2500000")
    view = view_range(page)
    labels = page.locator(".label.slice")
    k = next(i for i, text in enumerate(labels.all_inner_texts()) if "(python3)" in text)  # after the streams
    first, second, third = labels.nth(k), labels.nth(k + 1), labels.nth(k + 2)
    chosen = [int(first.get_attribute("data-track")), int(second.get_attribute("data-track"))]
    # WHEN Shift+drag goes from the first track down to the second
    _drag_area(page, first, second, 100, 700)
    # THEN the link holds the range and exactly the two tracks crossed
    start, end, *tracks = _area(page)
    assert tracks == chosen and view[0] < start < end < view[1]
    # AND the Selection tab lists the server's aggregation of that area, row for row
    expected = api(server, "/api/area?" + urlencode({"start": start, "end": end, "tracks": ",".join(map(str, tracks))}))
    panel = page.locator('[data-panel="selection"]')
    rows = panel.locator(".area-table tbody tr")
    assert rows.count() == len(expected["aggregate"]["rows"]) > 3
    cells = rows.nth(0).locator("td").all_inner_texts()
    top = expected["aggregate"]["rows"][0]
    assert cells[:4] == [top["name"], top["kind"], str(top["rank"]), str(top["count"])]
    assert {r["kind"] for r in expected["aggregate"]["rows"]} >= {"op", "runtime"}
    # AND a box on each track's label says whether it is in the area
    assert first.locator("input.area-track").is_checked() and not third.locator("input.area-track").is_checked()
    shot(page, "area-selection")
    # WHEN a flamegraph frame is clicked THEN the table keeps only rows of its name
    panel.locator("canvas.flame-canvas").scroll_into_view_if_needed()
    flame = panel.locator("canvas.flame-canvas").bounding_box()
    nodes = expected["flame"]["nodes"]
    assert nodes["total_ns"][0] > 0 and len(nodes["name"]) > 3
    page.mouse.click(flame["x"] + 5, flame["y"] + flame["height"] - 16 - 8)  # the widest frame above the root
    idle(page)
    note = panel.locator(".area-filter").inner_text()
    picked = note.split("rows named ")[1].split(" (")[0]
    names = panel.locator(".area-table tbody td.text").all_inner_texts()
    assert picked in nodes["name"] and names and all(t == picked for t in names)
    shot(page, "area-flamegraph-zoomed")
    flame = panel.locator("canvas.flame-canvas").bounding_box()
    page.mouse.click(flame["x"] + 5, flame["y"] + flame["height"] - 8)  # the root: the whole selection again
    idle(page)
    assert panel.locator(".area-filter").inner_text() == ""
    # WHEN the ops-only view is asked for THEN only framework ops are listed
    panel.locator('.area-views button[data-view="ops"]').click()
    idle(page)
    kinds = {r.locator("td").nth(1).inner_text() for r in panel.locator(".area-table tbody tr").all()}
    assert kinds == {"op"}
    # WHEN the third track is ticked THEN it joins the area and the link
    third.locator("input.area-track").check()
    idle(page)
    assert _area(page)[2:] == sorted([*chosen, int(third.get_attribute("data-track"))])
    # AND reloading the link shows the same area and its tracks
    page.reload()
    idle(page)
    assert page.locator(".label.slice").nth(2).locator("input.area-track").is_checked()
    assert page.locator('[data-panel="selection"] .area-table tbody tr').count() > 3
    # AND Esc clears it, from the view and from the link
    page.locator("canvas.tl-canvas").focus()
    page.keyboard.press("Escape")
    idle(page)
    assert _area(page) == [] and page.locator("input.area-track").count() == 0
    assert page.locator('[data-panel="selection"] .area-table').count() == 0

"""The Memory page in Chromium: a chart per counter on its own axis, a shared zoom, hover values, peaks
that open the timeline, and the largest allocations with their filters (screenshots in artifacts/)."""

from __future__ import annotations

from typing import Any

import pytest

from .test_browser import api, idle, open_view, shot, view_range

pytestmark = pytest.mark.slow


def _drag(page: Any, selector: str, start: float, end: float) -> None:
    box = page.locator(selector).first.bounding_box()
    y = box["y"] + box["height"] / 2
    page.mouse.move(box["x"] + box["width"] * start, y)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * (start + end) / 2, y)
    page.mouse.move(box["x"] + box["width"] * end, y)
    page.mouse.up()


def _range(locator: Any) -> tuple[int, int]:
    return int(locator.get_attribute("data-start")), int(locator.get_attribute("data-end"))


def test_each_counter_has_its_own_chart_and_one_zoom_moves_them_all(page: Any, server: str) -> None:
    series = api(server, "/api/memory/series")["series"]
    span = api(server, "/api/meta")["span_ns"]
    open_view(page, server + "/?page=memory")
    page.click('[data-subtab="memory"]')
    idle(page)
    assert page.locator("canvas.mem-chart").count() == len(series)  # one axis per counter, none flattened
    figures = page.locator("figure.mem-charts")
    assert all(_range(figures.nth(i)) == (0, span) for i in range(figures.count()))
    # hover: every chart of the rank says its value at the pointer
    box = page.locator("canvas.mem-chart").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] / 2)
    tip = page.locator(".mem-charts .tooltip:visible").inner_text()
    first_rank = [s for s in series if (s["run"], s["rank"]) == (series[0]["run"], series[0]["rank"])]
    assert tip.startswith("at ") and all(s["name"] in tip for s in first_rank)
    shot(page, "memory-counters-hover")
    _drag(page, "canvas.mem-chart", 0.3, 0.6)
    zoomed = [_range(figures.nth(i)) for i in range(figures.count())]
    assert len(set(zoomed)) == 1 and 0 < zoomed[0][0] < zoomed[0][1] < span  # all ranks' charts follow
    shot(page, "memory-counters-zoomed")
    page.locator("canvas.mem-chart").first.dblclick()
    assert _range(figures.first) == (0, span)


def test_a_peak_opens_the_timeline_at_that_time(page: Any, server: str) -> None:
    series = api(server, "/api/memory/series")["series"]
    open_view(page, server + "/?page=memory")
    page.click('[data-subtab="memory"]')
    idle(page)
    link = page.locator("a.peak-link").first
    assert series[0]["name"] in page.locator(".mem-series").first.inner_text()
    link.click()
    idle(page)
    start, end = view_range(page)
    assert "page=timeline" in page.url and start <= series[0]["peak"]["ts"] <= end and end - start <= 100_000


def test_largest_allocations_filter_by_size_and_stack_and_zoom_keeps_the_click(page: Any, server: str) -> None:
    sources = api(server, "/api/memory/sources")
    source = max(sources, key=lambda s: s["largest_bytes"])  # the page opens on it (max keeps the first on a tie)
    open_view(page, server + "/?page=memory")
    out = page.locator(".largest-out")
    assert out.locator("tbody tr").count() == min(source["count"], 200)
    assert f"{source['count']:,} allocation(s) match" in out.inner_text()
    query = f"/api/memory/largest?run={source['run']}&rank={source['rank']}&device={source['device']}"
    linear = api(server, query + "&stack=linear.py")["matching"]
    assert 0 < linear < source["count"]
    page.fill("input.stack-filter", "linear.py")
    idle(page)
    assert out.locator("p").inner_text().startswith(f"{linear:,} allocation(s) match")
    rows = out.locator("tbody tr .stack-text")
    assert rows.count() == min(linear, 200)
    assert all("linear.py" in (rows.nth(i).get_attribute("title") or "") for i in range(rows.count()))
    page.fill("input.min-size", "100000")  # 100 GB: nothing is that large
    idle(page)
    assert out.locator("p").inner_text().startswith("0 allocation(s) match")
    shot(page, "memory-largest-filtered")
    box = page.locator(".alloc-box")
    full = _range(box)
    _drag(page, "canvas.alloc-canvas", 0.2, 0.5)
    idle(page)
    assert _range(box)[1] - _range(box)[0] < full[1] - full[0]
    assert "page=memory" in page.url  # the drag zoomed; its closing click opened nothing
    shot(page, "memory-allocator-zoomed")


def test_the_allocator_peak_opens_the_timeline_there(page: Any, server: str) -> None:
    open_view(page, server + "/?page=memory")
    link = page.locator("a.alloc-peak")
    assert link.inner_text().startswith("peak ") and " at " in link.inner_text()
    href = dict(p.split("=") for p in (link.get_attribute("href") or "").lstrip("?").split("&"))
    link.click()
    idle(page)
    assert "page=timeline" in page.url
    assert view_range(page) == (float(href["start"]), float(href["end"]))  # a 100 µs window around the peak

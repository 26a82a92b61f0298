"""Analysis rows that open the timeline, the Info page and counter rows, in Chromium (screenshots in artifacts/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex

from .helpers import running_server
from .test_browser import api, idle, open_view, shot, view_range
from .test_browser_marks import _contrast

pytestmark = pytest.mark.slow


def test_a_top_kernels_row_opens_the_timeline_on_its_longest_kernel(page: Any, server: str) -> None:
    section = next(a for a in api(server, "/api/summary")["analyses"] if a["name"] == "top_kernels")
    first = section["rows"][0]
    open_view(page, server + "/?page=summary")
    table = page.locator('.analysis[data-analysis="top_kernels"] table')
    assert "example_id" not in table.locator("thead").inner_text()  # the id is the link, not a column of numbers
    link = table.locator("tbody tr").first.locator("a.row-link")
    assert link.get_attribute("href") == f"?page=timeline&sel={first['example_id']}"
    shot(page, "summary-row-links")
    link.click()
    idle(page)
    assert "page=timeline" in page.url and f"sel={first['example_id']}" in page.url
    assert page.locator(".panel .event-name").inner_text() == first["name"]
    event = api(server, f"/api/event/{first['example_id']}")
    hits = api(server, f"/api/search?q={first['name']}%20rank%3A{first['rank']}&limit=1000")["hits"]
    longest = max(h["dur"] for h in hits)
    assert event["dur"] == longest  # the example is the longest run of that kernel on that rank
    shot(page, "summary-row-opened")


def test_a_row_click_opens_the_timeline_too(page: Any, server: str) -> None:
    open_view(page, server + "/?page=summary")
    table = page.locator('.analysis[data-analysis="gpu_time_by_op"] table')
    column = [t.strip() for t in table.locator("thead th").all_inner_texts()].index("op")
    row = table.locator("tbody tr.clickable").first
    op = row.locator("td").nth(column).inner_text()
    row.click()
    idle(page)
    assert "page=timeline" in page.url and "sel=" in page.url
    assert page.locator(".panel .event-name").count() == 1  # the kernel's details; its chain leads back to the op
    page.click('[data-tab="dependencies"]')
    assert op in page.locator('[data-panel="dependencies"]').inner_text()


def test_info_page_lists_versions_clocks_files_and_what_was_lost(page: Any, server: str) -> None:
    open_view(page, server + "/?page=info")
    text = page.locator(".info-page").inner_text()
    assert "1,234" in text  # dropped events of the last rank
    lost = page.locator(".info-page table").nth(1).inner_text()
    assert "host_mem.pb" in lost and "truncated" in lost
    rows = page.locator(".info-page table").nth(1).locator("tbody tr").all_inner_texts()
    assert sum("dropped_events" in r for r in rows) == 1  # each loss once
    assert sum("\ttruncated" in r for r in rows) == 1
    assert page.locator(".info-session").count() == 4
    rank3 = page.locator('.info-session[data-rank="3"]').inner_text()
    assert "nccl" in rank3 and "profiler start (UTC)" in rank3 and "trace.json" in rank3 and "truncated" in rank3
    assert "CUDA / CUPTI" in rank3
    shot(page, "info-page")


def _counter_hover(page: Any, counter_id: int, at_ns: float) -> str:
    label = page.locator(f'.label[data-counter="{counter_id}"]')
    label.scroll_into_view_if_needed()
    box = label.bounding_box()
    canvas = page.locator("canvas.tl-canvas").bounding_box()
    start, end = view_range(page)
    page.mouse.move(canvas["x"] + (at_ns - start) / (end - start) * canvas["width"], box["y"] + box["height"] / 2)
    return str(page.locator(".tooltip:visible").inner_text())


def test_counter_rows_show_their_value_in_one_unit_and_switch_mode(page: Any, server: str) -> None:
    meta = api(server, "/api/meta")
    memory = next(c for c in meta["counters"] if c["unit"] == "bytes" and 2**20 <= c["max_value"] < 2**30)
    open_view(page, server + f"/?start=0&end={meta['span_ns']}")
    window = api(server, f"/api/counters?start=0&end={meta['span_ns']}&px=200&ids={memory['id']}")
    series = window["series"][str(memory["id"])]
    at = max(range(len(series["ts"])), key=lambda i: series["last"][i])
    between = (series["ts"][at] + (series["ts"][at + 1] if at + 1 < len(series["ts"]) else meta["span_ns"])) / 2
    tip = _counter_hover(page, memory["id"], between)
    assert memory["name"] in tip and "display: step" in tip
    value = tip.split("\n")[1]
    assert value.endswith(" MiB") and abs(float(value.split()[0]) - series["last"][at] / 2**20) <= 0.1, tip
    shot(page, "counter-step")
    button = page.locator(f'.label[data-counter="{memory["id"]}"] .counter-mode')
    button.click()
    assert button.inner_text() == "line"
    button.click()
    assert button.inner_text() == "rate"
    tip = _counter_hover(page, memory["id"], between)
    assert "display: rate" in tip and "/s" in tip.split("\n")[1]
    shot(page, "counter-rate")


@pytest.mark.parametrize("scheme", ["dark", "light"])
def test_new_controls_stay_readable_in_both_themes(page: Any, server: str, scheme: str) -> None:
    page.emulate_media(color_scheme=scheme)
    for url, selectors in ((f"{server}/?page=summary", ["a.row-link", ".bars .bar-legend .legend-item"]),
                           (f"{server}/?page=info", [".info-page td", ".info-page h3 .muted"]),
                           (f"{server}/", [".label .counter-mode"])):
        open_view(page, url)
        for selector in selectors:
            assert _contrast(page, selector) >= 4.5, (scheme, selector)
    open_view(page, f"{server}/?page=memory")
    page.click('[data-subtab="memory"]')
    idle(page)
    assert _contrast(page, "a.peak-link") >= 4.5, (scheme, "a.peak-link")
    shot(page, f"memory-counters-{scheme}")


def _counter_row_pixels(page: Any, counter_id: int) -> list[int]:
    """The canvas pixels (RGBA) of the counter's row, scrolled into view first."""
    label = page.locator(f'.label[data-counter="{counter_id}"]')
    label.scroll_into_view_if_needed()
    page.wait_for_timeout(100)  # the scroll event schedules the fetch and the redraw that idle then waits for
    idle(page)
    box = label.bounding_box()
    canvas = page.locator("canvas.tl-canvas").bounding_box()
    return list(page.evaluate("""([y, h]) => { const c = document.querySelector('canvas.tl-canvas');
        const dpr = c.width / c.getBoundingClientRect().width;
        return [...c.getContext('2d').getImageData(0, Math.round(y * dpr), c.width, Math.round(h * dpr)).data]; }""",
                              [box["y"] - canvas["y"], box["height"]]))


def test_a_counter_s_display_mode_and_scale_are_kept_in_the_link(page: Any, server: str) -> None:
    meta = api(server, "/api/meta")
    memory = next(c for c in meta["counters"] if c["unit"] == "bytes" and 2**20 <= c["max_value"] < 2**30)
    cid = memory["id"]
    open_view(page, server + f"/?start=0&end={meta['span_ns']}")
    default = _counter_row_pixels(page, cid)
    # WHEN its display is set to line and its scale to log
    page.click(f'.label[data-counter="{cid}"] .counter-mode')
    assert page.locator(f'.label[data-counter="{cid}"] .counter-scale').inner_text() == "auto"
    page.click(f'.label[data-counter="{cid}"] .counter-scale')
    idle(page)
    chosen = _counter_row_pixels(page, cid)
    assert chosen != default
    # THEN the link names both, and opening it draws the row the same way, with the buttons saying so
    assert f"cmode=c{cid}%3Aline%3Alog" in page.url or f"cmode=c{cid}:line:log" in page.url
    shot(page, "counter-line-log")
    link = page.url
    page.goto("about:blank")
    open_view(page, link)
    assert page.locator(f'.label[data-counter="{cid}"] .counter-mode').inner_text() == "line"
    assert page.locator(f'.label[data-counter="{cid}"] .counter-scale').inner_text() == "log"
    assert _counter_row_pixels(page, cid) == chosen
    assert "display: line · scale: log" in _counter_hover(page, cid, meta["span_ns"] / 2)
    # AND back to step on an automatic scale, the parameter leaves the link
    page.click(f'.label[data-counter="{cid}"] .counter-mode')
    page.click(f'.label[data-counter="{cid}"] .counter-mode')
    page.click(f'.label[data-counter="{cid}"] .counter-scale')
    page.click(f'.label[data-counter="{cid}"] .counter-scale')
    idle(page)
    assert "cmode" not in page.url
    assert _counter_row_pixels(page, cid) == default


def test_counter_displays_from_a_link_on_a_real_capture(page: Any, captured: Path) -> None:
    """The built-in demo's real capture (CPU and memory samples): a link naming a counter's display draws it."""
    with running_server(ViewerIndex.open(Dataset(captured))) as url:
        meta = api(url, "/api/meta")
        counter = next(c for c in meta["counters"] if c["min_value"] < c["max_value"])
        open_view(page, url + "/")
        default = _counter_row_pixels(page, counter["id"])
        open_view(page, f"{url}/?cmode=c{counter['id']}:rate:linear")
        label = page.locator(f'.label[data-counter="{counter["id"]}"]')
        assert label.locator(".counter-mode").inner_text() == "rate"
        assert label.locator(".counter-scale").inner_text() == "lin"
        assert _counter_row_pixels(page, counter["id"]) != default
        shot(page, "real-counter-rate")

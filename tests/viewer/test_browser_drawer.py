"""The full-width bottom drawer: the area's table and pivot, search hits, a query's virtualized result
and pinning it as a track, driven in Chromium (screenshots in artifacts/viewer/)."""

from __future__ import annotations

import json
import urllib.request
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import pytest

from .helpers import running_server
from .querying.test_sql import sql_workers
from .test_browser import api, idle, open_view, shot, view_range

pytestmark = pytest.mark.slow


def _shift_drag(page: Any, x0: float, x1: float, y0: float, y1: float) -> None:
    box = page.locator("canvas.tl-canvas").bounding_box()
    page.keyboard.down("Shift")
    page.mouse.move(box["x"] + x0, box["y"] + y0)
    page.mouse.down()
    page.mouse.move(box["x"] + x1, box["y"] + y1, steps=6)
    page.mouse.up()
    page.keyboard.up("Shift")
    idle(page)


def test_the_area_opens_in_a_full_width_drawer_that_resizes_and_pivots(page: Any, server: str) -> None:
    # GIVEN the timeline, its drawer folded to its tabs
    open_view(page, f"{server}/?start=500000&end=2500000")
    drawer = page.locator("section.drawer")
    assert drawer.get_attribute("class") == "drawer folded"
    # WHEN an area is selected
    _shift_drag(page, 100, 800, 60, 400)
    # THEN the drawer opens on it, as wide as the window, with every column of the table
    assert "folded" not in (drawer.get_attribute("class") or "")
    assert drawer.bounding_box()["width"] >= 1490
    panel = drawer.locator('[data-panel="selection"]')
    headers = panel.locator(".area-table th").all_inner_texts()
    assert headers == ["name", "kind", "rank", "count", "self", "total", "mean", "max"]
    # WHEN its top edge is dragged up THEN it grows, and keeps its height after a reload
    height = drawer.bounding_box()["height"]
    edge = drawer.locator(".drawer-resize").bounding_box()
    page.mouse.move(edge["x"] + 300, edge["y"] + 3)
    page.mouse.down()
    page.mouse.move(edge["x"] + 300, edge["y"] - 80, steps=4)
    page.mouse.up()
    assert abs(drawer.bounding_box()["height"] - (height + 83)) <= 3
    # WHEN the Pivot tab groups the area by kind, then by the argument "Input Dims"
    drawer.locator('.drawer-tabs button[data-tab="pivot"]').click()
    idle(page)
    start, end, *tracks = (int(x) for x in parse_qs(urlparse(page.url).query)["area"][0].split(","))
    query = {"start": start, "end": end, "tracks": ",".join(map(str, tracks))}
    pivot = drawer.locator('[data-panel="pivot"]')
    pivot.locator("select.pivot-by").select_option("kind")
    idle(page)
    expected = api(server, "/api/area/pivot?" + urlencode({**query, "by": "kind"}))["rows"]
    # THEN its rows are the server's, largest total first
    cells = [r.locator("td").all_inner_texts() for r in pivot.locator(".vtable tbody tr").all()]
    assert [c[0] for c in cells] == [r["key"] for r in expected] and len(cells) >= 2
    assert [c[1] for c in cells] == [f"{r['count']:,}" for r in expected]
    pivot.locator("select.pivot-by").select_option("arg")
    idle(page)
    by_dims = api(server, "/api/area/pivot?" + urlencode({**query, "by": "arg", "arg": "Input Dims"}))["rows"]
    keys = pivot.locator(".vtable tbody tr td:first-child").all_inner_texts()
    assert keys == [r["key"] or "(none)" for r in by_dims] and any("4096" in k for k in keys)
    shot(page, "drawer-pivot")
    # AND the drawer is still there, as high, after a reload
    grown = drawer.bounding_box()["height"]
    open_view(page, page.url)
    assert abs(page.locator("section.drawer").bounding_box()["height"] - grown) <= 2


def test_search_hits_list_in_the_drawer_and_a_click_shows_details(page: Any, server: str) -> None:
    open_view(page, server + "/")
    page.fill("input[type=search]", 'arg:"Input Dims=[4096, 4096]" rank:1')
    page.keyboard.press("Enter")
    idle(page)
    hits = page.locator('section.drawer [data-panel="search"]')
    assert hits.locator("tr.clickable").count() > 0
    assert set(hits.locator("td.text").all_inner_texts()) >= {"aten::linear"}
    assert page.locator(".side-tabs button.active").get_attribute("data-tab") == "details"
    assert page.locator(".panel .event-name").inner_text() == "aten::linear"


def test_a_ten_thousand_row_query_is_virtualized_pivoted_and_pinned(page: Any, server: str) -> None:
    # GIVEN the drawer's Query tab and a query of 10,000 rows (the dataset's events, seven times over)
    open_view(page, server + "/")
    page.locator('.drawer-tabs button[data-tab="query"]').click()
    panel = page.locator('section.drawer [data-panel="query"]')
    panel.locator("textarea").fill(
        "SELECT id, name, ts_ns, dur_ns, rank FROM events, range(7) ORDER BY ts_ns, range LIMIT 10000")
    # WHEN it runs
    panel.locator("button.run-query").click()
    idle(page)
    # THEN every row is counted but only those in view are in the page, and the last one scrolls into view
    assert panel.locator(".query-status").inner_text().startswith("10,000 row(s)")
    rows = panel.locator(".vtable tbody tr")
    assert 5 < rows.count() < 100
    table = panel.locator(".vtable")
    table.evaluate("el => { el.scrollTop = el.scrollHeight; }")
    page.wait_for_timeout(100)
    assert rows.count() < 100 and int(rows.last.get_attribute("data-row")) == 9999
    # WHEN the Pivot button groups the result by rank
    panel.locator("button", has_text="Pivot").click()
    pivot = page.locator('section.drawer [data-panel="pivot"]')
    pivot.locator("select.pivot-by").select_option("rank")
    counts = {r.locator("td").nth(0).inner_text(): int(r.locator("td").nth(1).inner_text().replace(",", ""))
              for r in pivot.locator(".vtable tbody tr").all()}
    # THEN the groups' counts add up to the result's rows
    assert sum(counts.values()) == 10_000 and set(counts) <= {"0", "1", "2", "3"}
    # WHEN the result is pinned as a track THEN it is drawn under the axis, and × unpins it
    page.locator('.drawer-tabs button[data-tab="query"]').click()
    panel.locator("button.pin-query").click()
    idle(page)
    row = page.locator(".tl-pinned-row")
    assert row.is_visible() and "10,000 rows" in row.inner_text()
    drawn = page.locator("canvas.tl-pinned-canvas").evaluate(
        "c => { const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;"
        " let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++; return n; }")
    assert drawn > 100
    shot(page, "drawer-pinned-query")
    row.locator("button.unpin").click()
    assert not row.is_visible()


_SCROLL_BY_JS = """async (px) => {
  const el = document.querySelector('section.drawer [data-panel="query"] .vtable');
  const frame = () => new Promise((r) => requestAnimationFrame(() => r()));
  const seen = [];
  const watch = new MutationObserver((records) => seen.push(...records));
  watch.observe(el.querySelector('tbody'), { subtree: true, childList: true, characterData: true });
  el.scrollTop += px;
  await frame();
  await frame();
  seen.push(...watch.takeRecords());
  watch.disconnect();
  const cellOf = (n) => (n.nodeType === Node.TEXT_NODE ? n.parentNode : n);
  return {
    replacedTexts: seen.filter((m) => m.type === 'childList' && m.target.tagName === 'TD').length,
    rewrittenRows: new Set(seen.filter((m) => m.type === 'characterData')
      .map((m) => cellOf(m.target).parentNode.dataset.row)).size,
  };
}"""
_ROWS_SHOWN_JS = """() => {
  const el = document.querySelector('section.drawer [data-panel="query"] .vtable');
  const view = el.getBoundingClientRect();
  return {
    headerTopPx: el.querySelector('thead th').getBoundingClientRect().top - view.top,
    rows: [...el.querySelectorAll('tbody tr')]
      .map((tr) => [Number(tr.dataset.row), tr.children[0].textContent, tr.children[1].textContent]),
  };
}"""


def test_a_scrolled_table_keeps_its_header_and_rewrites_only_the_rows_coming_into_view(page: Any, server: str) -> None:
    # GIVEN 100,000 rows in the drawer's Query tab, scrolled far down
    open_view(page, f"{server}/")
    page.locator('.drawer-tabs button[data-tab="query"]').click()
    page.evaluate("""() => window.kinetoscope.app.showRows(['id', 'name'],
        Array.from({ length: 100000 }, (_, i) => [i, `op_${i}`]))""")
    idle(page)
    page.evaluate(_SCROLL_BY_JS, 50_000 * 22)
    # WHEN it scrolls down by one row
    changed = page.evaluate(_SCROLL_BY_JS, 22)
    # THEN the cells keep their text nodes and only the row that came into view is rewritten
    assert changed == {"replacedTexts": 0, "rewrittenRows": 1}
    # AND every row shows its own cells, in order, under a header that stays at the top of the table
    shown = page.evaluate(_ROWS_SHOWN_JS)
    assert shown["headerTopPx"] == 0
    ids = [row for row, _, _ in shown["rows"]]
    assert ids == list(range(ids[0], ids[0] + len(ids))) and ids[0] <= 50_001 <= ids[-1] and len(ids) < 40
    assert all(text == str(row) and name == f"op_{row}" for row, text, name in shown["rows"])
    # WHEN it is sorted by id, descending, then scrolled back by one row
    page.locator('section.drawer [data-panel="query"] .vtable th').first.click()
    page.evaluate(_SCROLL_BY_JS, -22)
    # THEN the rows are rewritten in the new order
    rows = page.evaluate(_ROWS_SHOWN_JS)["rows"]
    assert [row for row, _, _ in rows] == list(range(rows[0][0], rows[0][0] - len(rows), -1))
    assert all(text == str(row) and name == f"op_{row}" for row, text, name in rows)


def test_opening_the_query_tab_starts_the_sql_worker_before_the_first_query(page: Any, multirank: Any) -> None:
    # GIVEN a viewer of its own whose page has not opened the Query tab: no SQL worker
    with running_server(multirank) as url:
        before = sql_workers()
        open_view(page, f"{url}/")
        assert sql_workers() == before
        # WHEN the Query tab opens
        page.locator('.drawer-tabs button[data-tab="query"]').click()
        idle(page)
        # THEN a worker starts, with no query run
        started = sql_workers() - before
        assert len(started) == 1
        # AND it answers the first query
        panel = page.locator('section.drawer [data-panel="query"]')
        panel.locator("textarea").fill("SELECT 42 AS answer")
        panel.locator("button.run-query").click()
        panel.locator(".vtable tbody tr").first.wait_for()
        assert panel.locator(".vtable tbody td").first.inner_text() == "42"
        assert sql_workers() - before == started


def _sql(server: str, q: str) -> dict[str, Any]:
    request = urllib.request.Request(f"{server}/api/sql", data=json.dumps({"q": q}).encode(),
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return dict(json.loads(response.read()))


def test_a_click_on_a_pinned_query_row_selects_it_and_shows_its_columns(page: Any, server: str) -> None:
    # GIVEN the longest event as a query's one row, with a column of the query's own, pinned as a track
    q = "SELECT name, ts_ns, dur_ns, id, rank, 'pinned here' AS note FROM events ORDER BY dur_ns DESC, id LIMIT 1"
    name, ts_ns, dur_ns, event_id, rank, _ = _sql(server, q)["rows"][0]
    meta = api(server, "/api/meta")
    open_view(page, f"{server}/?start=0&end={meta['span_ns']}")
    page.locator('.drawer-tabs button[data-tab="query"]').click()
    panel = page.locator('section.drawer [data-panel="query"]')
    panel.locator("textarea").fill(q)
    panel.locator("button.run-query").click()
    idle(page)
    panel.locator("button.pin-query").click()
    idle(page)
    # WHEN the row is clicked in its middle on the pinned track
    start, end = view_range(page)
    box = page.locator("canvas.tl-pinned-canvas").bounding_box()
    mid = int(ts_ns) - int(meta["t0_ns"]) + int(dur_ns) / 2
    page.mouse.click(box["x"] + (mid - start) / (end - start) * box["width"], box["y"] + 2 + 7)
    idle(page)
    # THEN the Details tab shows it: its name, and every column of the row
    assert page.locator(".side-tabs button.active").get_attribute("data-tab") == "details"
    details = page.locator(".panel").filter(has=page.locator(".event-name"))
    assert details.locator(".event-name").inner_text() == name
    rows = details.locator("table.kv tr").all()
    cells = dict(r.locator("td").all_inner_texts() for r in rows if r.locator("td").count())
    assert cells == {"name": name, "ts_ns": str(ts_ns), "dur_ns": str(dur_ns), "id": str(event_id), "rank": str(rank),
                     "note": "pinned here"}
    shot(page, "drawer-pinned-row-selected")
    # AND its id leads to the event's own details
    details.locator("a.event-link").click()
    idle(page)
    assert page.locator(".panel .event-name").inner_text() == name
    assert page.locator(".panel h4", has_text="Fields").count() == 1

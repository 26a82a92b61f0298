"""Search, layout, keyboard and small-page defects of the viewer, checked in Chromium (screenshots in artifacts/)."""

from __future__ import annotations

from typing import Any

import pytest

from .test_browser import ROW_PAD, SLICE_H, api, click_event, idle, open_view, shot, view_range

pytestmark = pytest.mark.slow

MATCH_RGB_TEST = "([r, g, b]) => r > 240 && g > 150 && g < 200 && b < 40"  # the amber outline of other matches


def canvas_pixels(page: Any, test: str) -> int:
    """How many pixels of the timeline canvas pass `test` (a JS predicate on [r, g, b])."""
    return int(page.evaluate(f"""() => {{
        const test = {test};
        const c = document.querySelector('canvas.tl-canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (test([d[i], d[i + 1], d[i + 2]])) n++;
        return n; }}"""))


def search(page: Any, query: str) -> None:
    page.fill("input[type=search]", query)
    page.keyboard.press("Enter")
    idle(page)


def selected_id(page: Any) -> str:
    return page.url.split("sel=")[1].split("&")[0]


def test_search_steps_through_every_hit_not_only_the_first_page(page: Any, server: str) -> None:
    total = api(server, "/api/search?q=aten")["total"]
    assert total > 200
    last = api(server, f"/api/search?q=aten&offset={total - 1}")["hits"][0]
    open_view(page, server + "/")
    search(page, "aten")
    assert page.locator(".search-count").inner_text() == f"hit 1 of {total}"
    page.keyboard.press("Shift+Enter")  # backwards from the first hit wraps to the very last one
    idle(page)
    assert page.locator(".search-count").inner_text() == f"hit {total} of {total}"
    assert selected_id(page) == last["id"]
    headers = page.locator('[data-panel="search"] thead th').all_inner_texts()
    assert headers[:2] == ["#", "rank"]
    current = page.locator('[data-panel="search"] tr.current td').all_inner_texts()
    assert current[0] == str(total) and current[1] == str(last["rank"])
    shot(page, "search-last-hit")


def test_malformed_query_says_what_is_wrong(page: Any, server: str) -> None:
    open_view(page, server + "/")
    search(page, "cat:kernel dur>1xs")
    error = page.locator('[data-panel="search"] .search-error')
    assert "dur>1xs" in error.inner_text() and "durations" in error.inner_text()
    assert page.locator("input[type=search]").get_attribute("aria-invalid") == "true"
    shot(page, "search-syntax-error")
    search(page, "/^aten::(mm|addmm)$/ OR \"Memcpy HtoD\"")
    parts = ("name:aten::mm", "name:aten::addmm", "%22Memcpy%20HtoD%22")
    expected = sum(api(server, f"/api/search?q={q}")["total"] for q in parts)
    assert page.locator(".search-count").inner_text().endswith(f"of {expected}")
    assert page.locator("input[type=search]").get_attribute("aria-invalid") == "false"


def test_a_query_typed_on_the_summary_page_opens_the_timeline(page: Any, server: str) -> None:
    open_view(page, server + "/?page=summary")
    search(page, "aten::addmm")
    assert "page=timeline" in page.url and page.locator(".timeline").is_visible()
    assert page.locator('[data-panel="search"] .search-count').is_visible()


def test_other_matches_are_outlined_on_the_timeline(page: Any, server: str) -> None:
    hit = api(server, "/api/search?q=aten::addmm%20rank:0")["hits"][0]
    open_view(page, f"{server}/?start={hit['ts'] - 100_000}&end={hit['ts'] + 200_000}")
    assert canvas_pixels(page, MATCH_RGB_TEST) == 0
    search(page, "aten::addmm")
    assert canvas_pixels(page, MATCH_RGB_TEST) > 50
    shot(page, "search-matches-outlined")


def canvas_width(page: Any) -> float:
    return float(page.locator("canvas.tl-canvas").bounding_box()["width"])


def drag(page: Any, selector: str, dx: float) -> None:
    box = page.locator(selector).bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + 60
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx, y, steps=4)
    page.mouse.up()
    idle(page)


def test_label_column_and_side_panel_resize_fold_and_are_remembered(browser: Any, server: str) -> None:
    context = browser.new_context(viewport={"width": 1000, "height": 700})
    pg = context.new_page()
    open_view(pg, server + "/")
    assert canvas_width(pg) >= 480  # was 300 px with the fixed 280 px labels and 420 px side panel
    before = canvas_width(pg)
    drag(pg, ".tl-resize", -50)
    assert canvas_width(pg) == pytest.approx(before + 50, abs=2)
    drag(pg, ".side-resize", -40)  # dragging the side panel's edge left widens it
    assert canvas_width(pg) == pytest.approx(before + 10, abs=2)
    open_view(pg, server + "/")
    assert canvas_width(pg) == pytest.approx(before + 10, abs=2)  # both widths are remembered
    pg.click(".fold-side")
    idle(pg)
    assert pg.locator("aside.side").bounding_box()["width"] <= 32
    pg.click(".fold-labels")
    idle(pg)
    assert canvas_width(pg) >= 1000 - 32 - 32 - 20
    shot(pg, "layout-folded")
    open_view(pg, server + "/")
    assert pg.locator("aside.side.folded").count() == 1
    pg.click(".fold-side")
    pg.click(".fold-labels")
    idle(pg)
    assert canvas_width(pg) == pytest.approx(before + 10, abs=2)
    context.close()


CONTRAST_JS = """([x, y, w, h]) => {
    const c = document.querySelector('canvas.tl-canvas');
    const dpr = c.width / c.getBoundingClientRect().width;
    const d = c.getContext('2d').getImageData(Math.round(x * dpr), Math.round(y * dpr), Math.round(w * dpr),
                                              Math.round(h * dpr)).data;
    const lin = (v) => (v / 255 <= 0.04045 ? v / 255 / 12.92 : ((v / 255 + 0.055) / 1.055) ** 2.4);
    const lum = (r, g, b) => 0.2126 * lin(r) + 0.7152 * lin(g) + 0.0722 * lin(b);
    const counts = new Map();
    for (let i = 0; i < d.length; i += 4) {
      const key = `${d[i]},${d[i + 1]},${d[i + 2]}`;
      counts.set(key, (counts.get(key) || 0) + 1);
    }
    const fill = lum(...[...counts].sort((a, b) => b[1] - a[1])[0][0].split(',').map(Number));
    let best = 1;  // the label's most contrasting pixel against the slice's fill (its most common colour)
    for (let i = 0; i < d.length; i += 4) {
      const l = lum(d[i], d[i + 1], d[i + 2]);
      best = Math.max(best, (Math.max(l, fill) + 0.05) / (Math.min(l, fill) + 0.05));
    }
    return best; }"""


def slice_box(page: Any, event: dict[str, Any]) -> tuple[float, float]:
    """Where `event` starts on the canvas (x from the canvas's left edge, y of its top)."""
    start, end = view_range(page)
    canvas = page.locator("canvas.tl-canvas").bounding_box()
    label = page.locator(f'.label[data-track="{event["track"]}"]').bounding_box()
    x = (event["ts"] - start) / (end - start) * canvas["width"]
    return x, label["y"] - canvas["y"] + ROW_PAD + event["lane"] * SLICE_H


def test_slice_labels_contrast_with_their_fill(browser: Any, server: str) -> None:
    context = browser.new_context(viewport={"width": 1500, "height": 900}, device_scale_factor=2)
    pg = context.new_page()
    step = api(server, "/api/search?q=ProfilerStep%230%20rank:0")["hits"][0]
    open_view(pg, f"{server}/?start={step['ts']}&end={step['ts'] + step['dur'] // 6}")
    ratios = {}
    for query in ("ProfilerStep%230", "aten::to", "linear.py", "cudaMemcpyAsync", "Memcpy"):
        event = api(server, f"/api/search?q={query}%20rank:0")["hits"][0]
        x, y = slice_box(pg, event)
        ratios[query] = pg.evaluate(CONTRAST_JS, [max(x, 0) + 2, y + 2, 40, SLICE_H - 5])
    shot(pg, "label-contrast")
    context.close()
    assert all(r >= 4.5 for r in ratios.values()), ratios


def test_instants_are_markers_that_can_be_selected(page: Any, server: str) -> None:
    instant = api(server, "/api/search?q=Iteration%20Start%20rank:0")["hits"][0]
    assert instant["dur"] == 0
    open_view(page, f"{server}/?start={instant['ts'] - 10_000}&end={instant['ts'] + 30_000}")
    x, y = slice_box(page, instant)
    cy = y + (SLICE_H - 1) / 2
    row = page.evaluate("""([x, y]) => { const c = document.querySelector('canvas.tl-canvas');
        const d = c.getContext('2d').getImageData(Math.round(x) - 10, Math.round(y), 21, 1).data; let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && (d[i] < 235 || d[i + 1] < 235)) n++; return n; }""",
                        [x, cy])
    assert row >= 7  # a diamond about 10 px wide, not a 1 px line
    dark = """([x, y]) => { const c = document.querySelector('canvas.tl-canvas');
        const d = c.getContext('2d').getImageData(Math.round(x) - 10, Math.round(y) - 10, 21, 21).data; let n = 0;
        for (let i = 0; i < d.length; i += 4) n += d[i + 3] > 200 && d[i] < 40 && d[i + 1] < 40 && d[i + 2] < 60;
        return n; }"""
    before = page.evaluate(dark, [x, cy])
    click_event(page, {**instant, "dur": 0})
    assert page.locator(".panel .event-name").inner_text() == instant["name"]
    assert page.evaluate(dark, [x, cy]) > before + 10  # the selection outline around the marker
    shot(page, "instant-selected")


def test_axis_labels_read_in_the_largest_unit_and_the_last_is_not_cut(page: Any, server: str) -> None:
    open_view(page, f"{server}/?start=1300000&end=1310000")
    labels = page.locator("canvas.tl-axis").get_attribute("aria-label") or ""
    assert "1.300 ms" in labels and "µs" not in labels
    open_view(page, f"{server}/?start=0&end=1003000")  # a tick 0.3 % from the right edge
    right_edge_ink = page.evaluate("""() => { const c = document.querySelector('canvas.tl-axis');
        const d = c.getContext('2d').getImageData(c.width - 3, 0, 3, c.height - 9).data; let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] < 150) n++; return n; }""")
    assert right_edge_ink == 0


def test_esc_leaves_the_search_box_and_keys_then_drive_the_timeline(page: Any, server: str) -> None:
    open_view(page, server + "/")
    search(page, "aten::addmm")
    box = page.locator("input[type=search]")
    page.keyboard.press("Escape")
    assert box.input_value() == "aten::addmm"  # the first Esc leaves the box, it does not clear it
    assert page.evaluate("document.activeElement.classList.contains('tl-canvas')")
    before = view_range(page)
    page.keyboard.press("w")
    idle(page)
    assert box.input_value() == "aten::addmm"
    after = view_range(page)
    assert after[1] - after[0] < before[1] - before[0]
    page.keyboard.press("Escape")  # the second Esc clears the search
    idle(page)
    assert box.input_value() == "" and "q=" not in page.url


def test_group_headers_rows_and_canvas_take_focus(page: Any, server: str) -> None:
    open_view(page, server + "/")
    header = page.locator(".label.group").first
    header.focus()
    assert header.evaluate("el => el === document.activeElement")
    page.keyboard.press("Enter")
    idle(page)
    assert page.locator(".label.group").first.get_attribute("aria-expanded") == "false"
    assert page.evaluate("document.activeElement.dataset.group") is not None  # focus stays on the header
    page.keyboard.press("Enter")
    idle(page)
    search(page, "aten::addmm rank:1")
    row = page.locator('[data-panel="search"] tbody tr').nth(2)
    row.focus()
    page.keyboard.press("Enter")
    idle(page)
    third = api(server, "/api/search?q=aten::addmm%20rank:1")["hits"][2]
    assert selected_id(page) == third["id"]
    page.locator("canvas.tl-canvas").focus()
    assert page.evaluate("document.activeElement.tagName") == "CANVAS"


def test_no_stale_tooltip_after_a_keyboard_zoom(page: Any, server: str) -> None:
    hit = api(server, "/api/search?q=aten::addmm%20rank:0")["hits"][0]
    open_view(page, f"{server}/?start={hit['ts'] - 40_000}&end={hit['ts'] + 60_000}")
    start, end = view_range(page)
    canvas = page.locator("canvas.tl-canvas").bounding_box()
    label = page.locator(f'.label[data-track="{hit["track"]}"]').bounding_box()
    x = canvas["x"] + (hit["ts"] + hit["dur"] / 2 - start) / (end - start) * canvas["width"]
    page.mouse.move(x, label["y"] + ROW_PAD + hit["lane"] * SLICE_H + SLICE_H / 2)
    tip = page.locator(".timeline .tooltip")
    assert tip.is_visible() and "aten::addmm" in tip.inner_text()
    page.keyboard.press("s")
    idle(page)
    assert not tip.is_visible()


def test_notes_show_once_and_stay_dismissed(page: Any, server: str) -> None:
    open_view(page, server + "/")
    notes = page.locator(".banner.note")
    assert notes.count() == 1 and "4 ranks" in notes.inner_text() and "no accelerator" in notes.inner_text()
    assert page.locator(".banner", has_text="no accelerator").count() == 1
    notes.locator("button.dismiss").click()
    assert page.locator(".banner.note").count() == 0
    open_view(page, server + "/")
    assert page.locator(".banner.note").count() == 0
    assert page.locator(".banner", has_text="dropped events").count() == 1  # damage is still reported


def test_constant_counters_hidden_until_asked_and_in_numeric_order(page: Any, server: str) -> None:
    open_view(page, server + "/")
    group = '.label.counter[data-counter] .name'  # the name, not the display-mode button beside it
    names = page.locator(group).all_inner_texts()
    assert names and not any("CPU 10" in n for n in names)
    page.check("input[aria-label='Show constant counters']")
    idle(page)
    names = [n.strip() for n in page.locator(group).all_inner_texts()][:8]
    assert names.index("CPU 10 utilisation (%)") == names.index("CPU 3 utilisation (%)") + 1


def test_sql_error_keeps_its_line_breaks(page: Any, server: str) -> None:
    open_view(page, server + "/?page=sql")
    page.fill("textarea.sql-editor", "SELECT * FROM nosuchtable")
    page.click("button.primary")
    idle(page)
    text = page.locator(".sql-out .error").inner_text()
    assert "\nLINE 1: SELECT * FROM nosuchtable\n" in text
    shot(page, "sql-error")


BROKEN_WORDS_JS = """() => {
    const broken = [];
    for (const node of document.querySelectorAll('.summary-page td, .summary-page th, .summary-page .card')) {
      const walker = document.createTreeWalker(node, NodeFilter.SHOW_TEXT);
      for (let t = walker.nextNode(); t; t = walker.nextNode()) {
        for (const m of t.data.matchAll(/[A-Za-z]{2,}/g)) {
          const r = document.createRange();
          r.setStart(t, m.index); r.setEnd(t, m.index + m[0].length);
          if (new Set([...r.getClientRects()].map((x) => Math.round(x.top))).size > 1) broken.push(m[0]);
        }
      }
    }
    return broken; }"""


def test_summary_words_stay_whole_and_backticks_render_as_code(browser: Any, server: str) -> None:
    context = browser.new_context(viewport={"width": 1000, "height": 800})
    pg = context.new_page()
    open_view(pg, server + "/?page=summary")
    assert pg.evaluate(BROKEN_WORDS_JS) == []
    descriptions = pg.locator(".summary-page .analysis > p.muted")
    assert "`" not in " ".join(descriptions.all_inner_texts())
    assert pg.locator('.analysis[data-analysis="memory_operations"] > p.muted code').first.inner_text() == "Memcpy HtoD"
    shot(pg, "summary-narrow")
    context.close()

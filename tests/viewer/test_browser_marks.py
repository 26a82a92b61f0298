"""Marks, focus and the key list, driven in Chromium (screenshots in artifacts/viewer/)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from .test_browser import api, click_event, idle, open_view, shot, view_range

pytestmark = pytest.mark.slow


def _marks_param(page: Any) -> str:
    return parse_qs(urlparse(page.url).query).get("marks", [""])[0]


def _hover(page: Any, fraction: float) -> None:
    box = page.locator("canvas.tl-canvas").bounding_box()
    page.mouse.move(box["x"] + fraction * box["width"], box["y"] + 40)


def test_marks_are_added_named_kept_in_the_link_and_exported(page: Any, server: str, tmp_path: Path) -> None:
    meta = api(server, "/api/meta")
    open_view(page, f"{server}/?start=1000000&end=3000000")
    _hover(page, 0.25)
    page.keyboard.press("m")
    _hover(page, 0.75)
    page.keyboard.press("m")
    idle(page)
    rows = page.locator('[data-panel="marks"] tbody tr')
    assert rows.count() == 2
    start, end = view_range(page)
    cells = rows.nth(1).locator("td").all_inner_texts()
    assert cells[2].startswith("+") and cells[2].endswith("ms")  # half the 2 ms view apart
    page.locator('[data-panel="marks"] input.mark-name').first.fill("forward starts")
    page.locator('[data-panel="marks"] input.mark-name').first.dispatch_event("change")
    idle(page)
    assert "~forward starts," in _marks_param(page)
    shot(page, "marks-two")
    page.reload()
    idle(page)
    page.locator('.side-tabs button[data-tab="marks"]').click()
    assert page.locator('[data-panel="marks"] tbody tr').count() == 2
    assert page.locator('[data-panel="marks"] input.mark-name').first.input_value() == "forward starts"
    with page.expect_download() as download_info:
        page.locator("button.export-marks").click()
    saved = tmp_path / "marks.json"
    download_info.value.save_as(saved)
    document = json.loads(saved.read_text())
    assert document["t0_ns"] == meta["t0_ns"] and [m["name"] for m in document["marks"]] == ["forward starts", "M2"]
    first, second = (m["offset_ns"] for m in document["marks"])
    assert start <= first < second <= end
    assert abs((second - first) - (end - start) / 2) < (end - start) * 0.05
    assert int(document["marks"][0]["time_ns"]) == int(meta["t0_ns"]) + first
    page.locator('[data-panel="marks"] button.remove-mark').first.click()
    idle(page)
    assert page.locator('[data-panel="marks"] tbody tr').count() == 1 and "M2" in _marks_param(page)


def test_f_zooms_to_the_selected_event_and_question_mark_lists_the_keys(page: Any, server: str) -> None:
    hit = api(server, "/api/search?q=aten%3A%3Aaddmm%20rank%3A0")["hits"][1]
    open_view(page, f"{server}/?start={hit['ts'] - 40_000}&end={hit['ts'] + 60_000}")
    click_event(page, hit)
    page.locator("button", has_text="Fit").click()
    idle(page)
    start, end = view_range(page)
    assert end - start > 50 * hit["dur"]
    page.locator("canvas.tl-canvas").focus()
    page.keyboard.press("f")
    idle(page)
    start, end = view_range(page)
    assert start <= hit["ts"] and hit["ts"] + hit["dur"] <= end and end - start <= 4 * hit["dur"]
    page.keyboard.press("?")
    dialog = page.locator(".help[role=dialog]")
    assert dialog.is_visible() and "zoom to the selected event" in dialog.inner_text()
    shot(page, "help-keys")
    page.keyboard.press("Escape")
    assert page.locator(".help").count() == 0


def _luminance(rgb: str) -> float:
    """WCAG relative luminance of a CSS ``rgb(r, g, b)`` colour."""
    channels = [int(part) / 255 for part in rgb[rgb.index("(") + 1 : rgb.index(")")].split(",")[:3]]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(page: Any, selector: str) -> float:
    color, background = page.evaluate(
        f"""() => {{ const el = document.querySelector({json.dumps(selector)}); const s = getComputedStyle(el);
        let bg = s.backgroundColor, node = el;
        while (bg === 'rgba(0, 0, 0, 0)' && node.parentElement) {{
            node = node.parentElement; bg = getComputedStyle(node).backgroundColor; }}
        return [s.color, bg]; }}"""
    )
    lighter, darker = sorted((_luminance(color), _luminance(background)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def test_the_dark_theme_follows_the_system_and_the_toggle_and_stays_readable(page: Any, server: str) -> None:
    page.emulate_media(color_scheme="dark")
    open_view(page, server + "/")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    background = page.evaluate("getComputedStyle(document.body).backgroundColor")
    assert _luminance(background) < 0.05
    axis_corner = page.evaluate("""() => { const c = document.querySelector('canvas.tl-axis');
        const [r, g, b] = c.getContext('2d').getImageData(2, 2, 1, 1).data; return r + g + b; }""")
    assert axis_corner < 150  # the axis is drawn in the theme's panel colour, not light grey
    for selector in (".label.slice", ".label.group", ".tl-toolbar .hint", '[data-panel="details"] p'):
        assert _contrast(page, selector) >= 4.5, selector
    shot(page, "theme-dark")
    page.locator("button.theme-toggle").click()
    assert page.evaluate("document.documentElement.dataset.theme") == "light"
    page.reload()
    idle(page)
    assert page.evaluate("document.documentElement.dataset.theme") == "light"  # the choice beats the system's
    for selector in (".label.slice", ".label.group", ".tl-toolbar .hint"):
        assert _contrast(page, selector) >= 4.5, selector


def test_sql_page_browses_the_schema_keeps_its_query_and_opens_rows(page: Any, server: str) -> None:
    open_view(page, server + "/?page=sql")
    events = page.locator('.schema-browser details[data-table="events"]')
    events.locator("summary").click()
    assert events.locator("li", has_text="ts_ns").count() == 1
    assert page.locator(".schema-browser details").count() >= 10  # every table of the dataset, tracks and kernels too
    hit = api(server, "/api/search?q=aten%3A%3Aaddmm%20rank%3A0")["hits"][0]
    query = f"SELECT id, name, ts_ns FROM events WHERE id = {hit['id']}"
    page.fill("textarea.sql-editor", query)
    page.locator("button.primary", has_text="Run").click()
    idle(page)
    assert parse_qs(urlparse(page.url).query)["sql"] == [query]
    shot(page, "sql-schema-browser")
    page.reload()
    idle(page)
    assert page.locator("textarea.sql-editor").input_value() == query
    assert page.locator(".sql-out tbody tr").count() == 1  # the query in the link ran again
    page.locator(".sql-out tbody tr").first.click()
    idle(page)
    assert "page=timeline" in page.url and f"sel={hit['id']}" in page.url
    start, end = view_range(page)
    assert start <= hit["ts"] <= end


def test_summary_page_lists_the_findings_and_their_evidence_opens_the_timeline(
    page: Any, server: str, multirank: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from kinetoscope.cli import main

    # GIVEN the findings the command line reports on the same dataset, grouped across ranks
    assert main(["findings", str(multirank.dataset.path), "--json"]) == 0
    expected = json.loads(capsys.readouterr().out)["groups"]
    assert expected, "the generated dataset has findings (its last rank lost events)"
    # THEN the Summary page lists the same groups, in the same order, each once with its ranks
    open_view(page, server + "/?page=summary")
    page.wait_for_selector(".finding-list")
    items = page.locator(".finding-list > li.finding")
    assert items.count() == len(expected)
    assert [items.nth(i).get_attribute("data-rule") for i in range(items.count())] == [f["rule"] for f in expected]
    heads = [items.nth(i).locator(".finding-head").inner_text() for i in range(items.count())]
    assert all(group["headline"] in head for group, head in zip(expected, heads, strict=True))
    shot(page, "summary-findings")
    # AND a finding's evidence opens the timeline on that event
    with_evidence = next(i for i, f in enumerate(expected) if f["evidence"])
    first = expected[with_evidence]["evidence"][0]
    items.nth(with_evidence).locator("a.evidence").first.click()
    idle(page)
    assert "page=timeline" in page.url and f"sel={first['event_id']}" in page.url
    shown = page.locator('[data-panel="details"] h3.event-name').inner_text()
    assert first["name"].endswith(shown)  # a gap's evidence is named "idle before <the event that ends it>"

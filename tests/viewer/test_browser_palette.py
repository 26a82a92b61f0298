"""The command palette (Ctrl+K, Ctrl+Shift+P) driven from the keyboard alone in Chromium
(screenshots in artifacts/viewer/)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from .test_browser import idle, open_view, shot

pytestmark = pytest.mark.slow


def _param(page: Any, key: str) -> str:
    return parse_qs(urlparse(page.url).query).get(key, [""])[0]


def _command(page: Any, text: str, opener: str = "Control+k") -> None:
    """Opens the palette, types `text` and runs the first command listed."""
    page.keyboard.press(opener)
    page.wait_for_selector(".palette[role=dialog]")
    page.keyboard.type(text)
    page.keyboard.press("Enter")
    idle(page)
    assert page.locator(".palette").count() == 0


def test_palette_lists_filters_and_runs_every_action_by_keyboard(page: Any, server: str) -> None:
    open_view(page, server + "/")
    # WHEN Ctrl+K is pressed THEN the palette lists the actions with their keys, the box focused
    page.keyboard.press("Control+k")
    listed = page.locator(".palette-list li").all_inner_texts()
    assert any(t.startswith("Add mark") and t.endswith("M") for t in listed)
    assert any(t.startswith("Go to page: memory") for t in listed)
    assert any(t.startswith("Go to track: rank 1") for t in listed)
    assert page.evaluate("document.activeElement.className") == "palette-input"
    # AND typing narrows the list; ↓ moves the choice
    page.keyboard.type("stream 7 rank 1")
    narrowed = page.locator(".palette-list li").all_inner_texts()
    assert narrowed and all("stream 7" in t and "rank 1" in t for t in narrowed) and len(narrowed) < len(listed)
    shot(page, "palette-filtered")
    # WHEN Esc is pressed THEN it closes and nothing ran
    page.keyboard.press("Escape")
    assert page.locator(".palette").count() == 0 and _param(page, "nopy") == ""
    # WHEN "hide python" runs THEN the layout hides Python frames (in the link)
    _command(page, "hide python")
    assert _param(page, "nopy") == "1" and page.locator("input.hide-python").is_checked()
    # WHEN "add mark" runs (Ctrl+Shift+P) THEN a mark is in the Marks tab and the link
    _command(page, "add mark", "Control+Shift+P")
    assert _param(page, "marks") and page.locator(".side-tabs button.active").get_attribute("data-tab") == "marks"
    # WHEN "go to track" names the last rank's last track THEN it is scrolled to and flashed
    last = page.locator(".label.slice .name").last.inner_text()
    _command(page, f"go to track rank 3 {last}")
    found = page.locator(".label.slice.found")
    assert found.count() == 1 and found.locator(".name").inner_text() == last
    assert page.locator(".tl-scroll").evaluate("el => el.scrollTop") > 0
    shot(page, "palette-went-to-track")
    # WHEN the theme command runs THEN the page turns dark
    _command(page, "theme dark")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    # WHEN "page summary" runs THEN the Summary page opens
    _command(page, "page: summary")
    assert _param(page, "page") == "summary"
    # AND the key list (?) names the palette's keys
    page.keyboard.press("?")
    assert "Ctrl+K" in page.locator(".help[role=dialog] tbody").inner_text()

"""The page of `kinetoscope view` while its dataset is prepared, in Chromium: a progress bar, then the timeline."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..cli.test_view_cli import serve
from ..ingest.helpers import DATA
from .helpers import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.slow
playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not CHROMIUM.exists():
    pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)


@pytest.fixture
def page() -> Iterator[tuple[Any, list[str]]]:
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        pg = browser.new_context(viewport={"width": 1300, "height": 800}).new_page()
        errors: list[str] = []
        pg.on("pageerror", lambda e: errors.append(str(e)))
        pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        yield pg, errors
        browser.close()


def test_the_page_shows_progress_while_preparing_then_the_timeline(page: tuple[Any, list[str]],
                                                                   tmp_path: Path) -> None:
    """Eight raw DLRM traces, opened the moment the URL is printed (the browser is already up)."""
    pg, errors = page
    traces = shutil.copytree(DATA / "dlrm_8rank", tmp_path / "dlrm_8rank")
    proc, url = serve(traces)
    try:
        pg.goto(url)
        pg.wait_for_selector("progress.prepare-bar", timeout=10_000)
        stage = pg.locator(".prepare-stage").inner_text()
        assert stage.startswith("Step ") and " of 3: " in stage
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(ARTIFACTS / "loading-progress.png"))
        pg.wait_for_selector("canvas.tl-canvas", timeout=120_000)
        pg.wait_for_selector("html[data-idle=true]", state="attached", timeout=30_000)
        assert pg.locator(".prepare").count() == 0
        assert pg.locator(".label[data-track]").count() > 0
        pg.screenshot(path=str(ARTIFACTS / "loading-then-timeline.png"))
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert errors == []


def test_a_failed_preparation_is_shown_on_the_page(page: tuple[Any, list[str]], tmp_path: Path) -> None:
    pg, errors = page
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "rank0.pt.trace.json").write_text("{ this is not json")
    proc, url = serve(bad)
    try:
        pg.goto(url)
        pg.wait_for_selector(".fatal", timeout=60_000)
        assert "preparing the dataset failed" in pg.locator(".fatal").inner_text()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert errors == []

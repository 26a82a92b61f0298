"""The page of `kinetoscope view` while its dataset is prepared, in Chromium: a progress bar, then the timeline."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..cli.test_view_cli import serve
from ..ingest.helpers import DATA
from .helpers import ARTIFACTS, CHROMIUM

pytestmark = pytest.mark.slow
playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not CHROMIUM.exists():
    pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)


@pytest.fixture
def page(browser: Any) -> Iterator[tuple[Any, list[str]]]:
    context = browser.new_context(viewport={"width": 1300, "height": 800})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    yield pg, errors
    context.close()


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


def big_trace(path: Path, ops: int) -> Path:
    """A raw trace as Kineto writes it: one rank's framework ops first, then its kernels, then the
    thread names; each event over several lines."""
    with open(path, "w") as out:
        out.write('{\n  "schemaVersion": 1,\n  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},\n'
                  '  "traceEvents": [\n')
        for i in range(ops):
            out.write(f'  {{\n    "ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7,\n'
                      f'    "ts": {10.0 * i:.3f}, "dur": 6.000,\n    "args": {{"External id": {i}}}\n'
                      '  },\n')
        for i in range(ops):
            out.write(f'  {{\n    "ph": "X", "cat": "kernel", "name": "sgemm_128x64", "pid": 0, "tid": 7,\n'
                      f'    "ts": {10.0 * i + 3:.3f}, "dur": 5.000,\n    "args": {{"device": 0, "stream": 7}}\n'
                      '  },\n')
        out.write('  {"ph": "M", "name": "thread_name", "pid": 7, "tid": 7, "args": {"name": "python"}}\n'
                  '  ],\n  "traceName": "rank0.pt.trace.json"\n}\n')
    return path


def header_events(pg: Any) -> int:
    return int(pg.locator("header .meta").inner_text().split(" events")[0].replace(",", ""))


def test_a_big_trace_shows_a_labelled_preview_first_then_the_whole(page: tuple[Any, list[str]], tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A 60 MB raw trace viewed with a 1 MB preview: the preview's timeline is drawn, under a banner
    that says what it is, while the whole is prepared; then the page reloads on the whole."""
    pg, errors = page
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # where the preview is prepared
    (tmp_path / "traces").mkdir()
    big_trace(tmp_path / "traces" / "rank0.pt.trace.json", ops=120_000)
    proc, url = serve(tmp_path / "traces", "--preview-mb", "1")
    try:
        pg.goto(url)
        banner = pg.wait_for_selector(".banner.preview", timeout=240_000)
        pg.wait_for_selector("canvas.tl-canvas", timeout=30_000)
        pg.wait_for_selector("html[data-idle=true]", state="attached", timeout=30_000)
        assert pg.locator(".banner.preview").count() == 1, "the whole was ready before the preview was drawn"
        text = banner.inner_text()
        assert text.startswith("Preview: the first ") and "rank0.pt.trace.json" in text and "rank 0" in text
        assert "The whole trace is loading: Step " in text
        preview_events = header_events(pg)
        assert 0 < preview_events < 20_000  # about 1 MB of the ops, written first; no kernel yet
        assert pg.locator(".label[data-track]").count() > 0
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        pg.screenshot(path=str(ARTIFACTS / "loading-preview.png"))
        pg.locator("nav.tabs a[data-page=info]").click()  # a page of the link, kept by the reload
        pg.wait_for_function("() => location.search.includes('page=info')", timeout=10_000)
        link = pg.url
        pg.wait_for_selector(".banner.preview", state="detached", timeout=300_000)  # reloaded on the whole
        pg.wait_for_selector("html[data-idle=true]", state="attached", timeout=60_000)
        assert pg.url == link
        pg.locator("nav.tabs a[data-page=timeline]").click()
        pg.wait_for_selector("canvas.tl-canvas", timeout=30_000)
        pg.wait_for_selector("html[data-idle=true]", state="attached", timeout=60_000)
        assert header_events(pg) == 240_000
        pg.screenshot(path=str(ARTIFACTS / "loading-preview-then-whole.png"))
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert errors == []
    assert not list((tmp_path / "cache" / "kinetoscope" / "view-previews").glob("preview-*"))  # removed at exit

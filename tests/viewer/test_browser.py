"""The viewer in a real browser (Debian's Chromium driven by Playwright): screenshots go to artifacts/viewer/."""

from __future__ import annotations

import json
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.viewer.dataset import Dataset
from kinetoscope.viewer.index import ViewerIndex
from kinetoscope.viewer.synthetic import HOSTILE_NAME

from ..conftest import PYTHON, python_env
from .helpers import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, running_server

pytestmark = pytest.mark.slow
playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not CHROMIUM.exists():
    pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

SLICE_H, ROW_PAD = 18, 3


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1500, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(8_000)
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    # a rejected SQL query is an expected 400; any other console error fails the test
    pg.on("console", lambda m: errors.append(m.text) if m.type == "error" and "status of 400" not in m.text else None)
    pg.on("dialog", lambda d: errors.append(f"dialog: {d.message}"))
    yield pg
    context.close()
    assert errors == []


@pytest.fixture(scope="module")
def server(multirank: ViewerIndex) -> Iterator[str]:
    with running_server(multirank) as url:
        yield url


def idle(page: Any) -> None:
    page.wait_for_selector("html[data-idle=true]", state="attached", timeout=20_000)


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"))


def api(base: str, path: str) -> Any:
    with urllib.request.urlopen(base + path, timeout=30) as response:
        return json.loads(response.read())


def open_view(page: Any, url: str) -> None:
    page.goto(url)
    idle(page)


def view_range(page: Any) -> tuple[float, float]:
    params = dict(p.split("=", 1) for p in page.url.split("?", 1)[1].split("&"))
    return float(params["start"]), float(params["end"])


def click_event(page: Any, event: dict[str, Any]) -> None:
    """Clicks the middle of `event` on the canvas, computed from the view range and its track's label."""
    start, end = view_range(page)
    canvas = page.locator("canvas.tl-canvas").bounding_box()
    label = page.locator(f'.label[data-track="{event["track"]}"]').bounding_box()
    mid = event["ts"] + event["dur"] / 2
    x = canvas["x"] + (mid - start) / (end - start) * canvas["width"]
    y = label["y"] + ROW_PAD + event["depth"] * SLICE_H + SLICE_H / 2
    page.mouse.click(x, y)
    idle(page)


def test_zoom_pan_click_details_flows_and_deep_link(page: Any, server: str) -> None:
    hit = api(server, "/api/search?q=aten%3A%3Aaddmm%20rank%3A0")["hits"][1]
    open_view(page, f"{server}/?start={hit['ts'] - 40_000}&end={hit['ts'] + 60_000}")
    shot(page, "timeline-multirank")
    before = view_range(page)
    page.keyboard.press("w")
    idle(page)
    zoomed = view_range(page)
    assert zoomed[1] - zoomed[0] < before[1] - before[0]
    page.keyboard.press("d")
    idle(page)
    assert view_range(page)[0] > zoomed[0]
    open_view(page, f"{server}/?start={hit['ts'] - 40_000}&end={hit['ts'] + 60_000}")
    click_event(page, hit)
    assert page.locator(".panel .event-name").inner_text() == "aten::addmm"
    details = page.locator('[data-panel="details"]').inner_text()
    assert "cpu_op" in details and "Input Dims" in details and "torch/nn/modules/linear.py:125" in details
    page.click('[data-tab="dependencies"]')
    deps = page.locator('[data-panel="dependencies"]')
    assert "cudaLaunchKernel" in deps.inner_text() and "sm90_xmma_gemm" in deps.inner_text()
    shot(page, "dependency-chain")
    deps.locator("tr.clickable", has_text="sm90_xmma_gemm").first.click()
    idle(page)
    assert "sm90_xmma_gemm" in page.locator(".panel .event-name").inner_text()
    assert "sel=" in page.url
    kernel_url = page.url
    page.goto(kernel_url)  # a deep link restores the range and the selection
    idle(page)
    assert "sm90_xmma_gemm" in page.locator(".panel .event-name").inner_text()
    assert view_range(page) == pytest.approx(dict(x.split("=") for x in kernel_url.split("?")[1].split("&")) and
                                             (float(kernel_url.split("start=")[1].split("&")[0]),
                                              float(kernel_url.split("end=")[1].split("&")[0])))


def test_groupings_banners_and_hostile_names(page: Any, server: str) -> None:
    open_view(page, server + "/")
    assert page.locator(".label.group").count() == 4  # one process per rank, all on one timeline
    banners = page.locator(".banner").all_inner_texts()
    assert any("dropped events" in b and "device_3.pb" in b for b in banners)
    assert page.locator('.label.group[data-group^="p:synthetic:3"] .badge.warn').count() == 1
    page.select_option("#grouping", "device")
    idle(page)
    assert "group=device" in page.url
    assert {t.strip() for t in page.locator(".label.group .name").all_inner_texts()} >= {"device 0", "host"}
    hit = api(server, "/api/search?q=onerror")["hits"][0]
    page.fill("input[type=search]", "onerror")
    page.keyboard.press("Enter")
    idle(page)
    page.click('[data-tab="details"]')
    assert page.locator(".panel .event-name").inner_text() == HOSTILE_NAME
    assert page.locator("img").count() == 0
    assert hit["name"] == HOSTILE_NAME
    shot(page, "search-hostile-name")


def test_search_results_and_range_summary(page: Any, server: str) -> None:
    open_view(page, server + "/")
    page.fill("input[type=search]", "cat:kernel rank:2 dur>20us")
    page.keyboard.press("Enter")
    idle(page)
    assert "match" in page.locator(".search-count").inner_text()
    rows = page.locator('[data-panel="search"] tr.clickable')
    assert rows.count() > 0
    rows.nth(1).click()
    idle(page)
    page.click('[data-tab="details"]')
    assert page.locator(".panel .event-name").inner_text().startswith(("sm90", "nccl"))
    open_view(page, server + "/")
    box = page.locator("canvas.tl-canvas").bounding_box()
    page.keyboard.down("Shift")
    page.mouse.move(box["x"] + 100, box["y"] + 100)
    page.mouse.down()
    page.mouse.move(box["x"] + 600, box["y"] + 120, steps=5)
    page.mouse.up()
    page.keyboard.up("Shift")
    idle(page)
    panel = page.locator('[data-panel="selection"]').text_content()
    assert "Top kernels" in panel and "Busy time per track" in panel
    shot(page, "range-summary")


def hover_says(page: Any, x: float, y: float, text: str) -> bool:
    page.mouse.move(x, y)
    tip = page.locator(".memory-page .tooltip")
    return tip.is_visible() and text in tip.inner_text()


def test_memory_summary_and_sql_pages(page: Any, server: str) -> None:
    open_view(page, server + "/?page=memory")
    assert page.locator("canvas.alloc-canvas").count() == 1
    box = page.locator("canvas.alloc-canvas").bounding_box()
    spot = next((x, y) for y in range(int(box["height"]) - 40, 20, -12) for x in range(100, int(box["width"]), 40)
                if hover_says(page, box["x"] + x, box["y"] + y, "freed after"))
    idle(page)
    assert "torch/nn/modules/linear.py" in page.locator(".tooltip:visible").inner_text()  # the allocating stack
    shot(page, "memory-allocator")
    page.mouse.click(box["x"] + spot[0], box["y"] + spot[1])
    idle(page)
    assert "page=timeline" in page.url and page.locator(".panel .event-name").count() == 1
    open_view(page, server + "/?page=memory")
    page.click('[data-subtab="memory"]')
    idle(page)
    assert page.locator("figure.chart").count() == 4 and "peak" in page.locator(".peak-label").first.inner_text()
    shot(page, "memory-counters")
    open_view(page, server + "/?page=summary")
    text = page.locator(".summary-page").inner_text()
    assert "Step time per rank" in text and "Communication overlapped with compute" in text
    shot(page, "summary")
    open_view(page, server + "/?page=sql")
    page.fill("textarea.sql-editor", "SELECT rank, count(*) AS n FROM events GROUP BY rank ORDER BY rank")
    page.click("button.primary")
    idle(page)
    assert page.locator(".sql-out tbody tr").count() == 4
    with page.expect_download() as download:
        page.click("text=Download CSV")
    assert Path(download.value.path()).read_text().startswith("rank,n")
    page.fill("textarea.sql-editor", "DELETE FROM events")
    page.click("button.primary")
    idle(page)
    assert "only SELECT" in page.locator(".sql-out .error").inner_text()
    shot(page, "sql")


def test_page_loads_with_every_outside_request_blocked(browser: Any, server: str) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    blocked: list[str] = []

    def guard(route: Any) -> None:
        if route.request.url.startswith(server):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    context.route("**/*", guard)
    pg = context.new_page()
    pg.goto(server + "/")
    idle(pg)
    for page_name in ("memory", "summary", "sql", "timeline"):
        pg.click(f'nav a[data-page="{page_name}"]')
        idle(pg)
    assert blocked == []
    assert pg.locator(".label.group").count() == 4
    context.close()


@pytest.fixture(scope="module")
def captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real torch.profiler capture (the built-in demo), ingested."""
    out = tmp_path_factory.mktemp("captured")
    subprocess.run([PYTHON, "-m", "kinetoscope", "demo", "--out", str(out), "--steps", "2"], env=python_env(),
                   check=True, capture_output=True, timeout=240)
    from kinetoscope.viewer.source import resolve_dataset

    return resolve_dataset(out, say=lambda _: None).root


def test_real_captured_session(page: Any, captured: Path) -> None:
    index = ViewerIndex.open(Dataset.open(captured))
    with running_server(index) as url:
        open_view(page, url + "/")
        labels = page.locator(".label.slice").all_inner_texts()
        assert any("framework · thread" in label for label in labels)
        step = api(url, "/api/search?q=ProfilerStep%231")["hits"][0]
        open_view(page, f"{url}/?start={step['ts']}&end={step['ts'] + step['dur']}")
        shot(page, "real-session")
        click_event(page, step)
        assert page.locator(".panel .event-name").inner_text() == "ProfilerStep#1"
        page.click('nav a[data-page="memory"]')
        page.click('[data-subtab="memory"]')
        idle(page)
        assert page.locator("figure.chart").count() >= 1
        shot(page, "real-session-memory")

"""The viewer in a real browser (Debian's Chromium driven by Playwright): screenshots go to artifacts/viewer/."""

from __future__ import annotations

import http.server
import json
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying.sql import SqlRunner
from kinetoscope.viewer.serving.access import Access

from ..conftest import PYTHON, python_env, requires_cxx
from ..ingest.helpers import DATA
from ..kineto_gen import HOSTILE_NAME
from .helpers import ARTIFACTS, CHROMIUM, running_server

pytestmark = pytest.mark.slow
playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
if not CHROMIUM.exists():
    pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

SLICE_H, ROW_PAD = 18, 3


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
    y = label["y"] + ROW_PAD + event["lane"] * SLICE_H + SLICE_H / 2
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
    # a long kernel name is cut with an ellipsis (full name on hover); the figures beside it stay whole
    kernel_row = deps.locator("tr.clickable", has_text="sm90_xmma_gemm").first
    assert "sm90_xmma_gemm" in (kernel_row.locator("td.text").first.get_attribute("title") or "")
    cells = kernel_row.locator("td")
    duration = cells.nth(cells.count() - 1)
    one_line = "td => { const r = document.createRange(); r.selectNodeContents(td); return r.getClientRects().length; }"
    assert duration.evaluate(one_line) == 1 and duration.evaluate("td => td.scrollWidth <= td.clientWidth")
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
    assert page.locator(".search-count").inner_text().startswith("hit 1 of ")
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
    assert "by name, kind and rank" in panel and "Busy time per track" in panel
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
    for page_name in ("memory", "summary", "sql", "info", "timeline"):
        pg.click(f'nav a[data-page="{page_name}"]')
        idle(pg)
    assert blocked == []
    assert pg.locator(".label.group").count() == 4
    context.close()


def test_real_captured_session(page: Any, captured: Path) -> None:
    index = ViewerIndex.open(Dataset(captured))
    with running_server(index) as url:
        open_view(page, url + "/")
        labels = page.locator(".label.slice").all_inner_texts()
        names = [str(r[0]) for r in index.cursor().execute("SELECT name FROM view_tracks WHERE layer = 'framework'")
                 .fetchall()]
        assert names and any(name in label for label in labels for name in names)  # the dataset's track names
        step = api(url, "/api/search?q=ProfilerStep%231")["hits"][0]
        # its Python frames unfolded (a real capture has more than 8 lanes of them), so the step is in its lane
        open_view(page, f"{url}/?start={step['ts']}&end={step['ts'] + step['dur']}&pyopen=t{step['track']}")
        shot(page, "real-session")
        click_event(page, step)
        assert page.locator(".panel .event-name").inner_text() == "ProfilerStep#1"
        page.click('nav a[data-page="memory"]')
        page.click('[data-subtab="memory"]')
        idle(page)
        assert page.locator("figure.chart").count() >= 1
        shot(page, "real-session-memory")


@pytest.fixture(scope="module")
def imported_dlrm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The eight-rank DLRM CUDA traces of tests/data, through `kinetoscope import`, then ingested."""
    out = tmp_path_factory.mktemp("dlrm") / "prof"
    subprocess.run([PYTHON, "-m", "kinetoscope", "import", str(DATA / "dlrm_8rank"), "--out", str(out)],
                   env=python_env(), check=True, capture_output=True, timeout=120)
    from kinetoscope.viewer.indexing.source import resolve_dataset

    return resolve_dataset(out, say=lambda _: None).path


ARROW_RGB = (194, 65, 12)  # runtime -> device arrows (#c2410c)


def arrow_pixels(page: Any) -> int:
    """How many canvas pixels have the runtime -> device arrow colour."""
    return int(page.evaluate("""([r, g, b]) => {
        const c = document.querySelector('canvas.tl-canvas');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] === r && d[i + 1] === g && d[i + 2] === b) n++;
        return n; }""", list(ARROW_RGB)))


def click_visible_event(page: Any, event: dict[str, Any]) -> None:
    page.locator(f'.label[data-track="{event["track"]}"]').scroll_into_view_if_needed()
    page.wait_for_timeout(300)  # the scroll fetches the tracks now in view
    idle(page)
    click_event(page, event)


def test_imported_multirank_trace(page: Any, imported_dlrm: Path) -> None:
    index = ViewerIndex.open(Dataset(imported_dlrm))
    with running_server(index) as url:
        open_view(page, url + "/")
        assert page.locator(".label.group").count() == 8  # every rank on the one timeline
        shot(page, "dlrm-timeline")
        # the main thread's runtime calls: their own track, named from thread_name, two lanes high
        runtime = next(t for t in api(url, "/api/meta")["tracks"]
                       if t["rank"] == 0 and t["name"] == "thread 59811 (python3) · runtime")
        label = page.locator(f'.label[data-track="{runtime["id"]}"]')
        assert "thread 59811 (python3) · runtime" in label.inner_text()
        assert label.bounding_box()["height"] == pytest.approx(2 * SLICE_H + 2 * ROW_PAD, abs=1)
        # aligned: the last AllReduce is one collective, so it ends at the same time on every rank
        last = {}
        for rank in range(8):
            hits = api(url, f"/api/search?q=AllReduce%20rank%3A{rank}%20cat%3Akernel")["hits"]
            last[rank] = max(hits, key=lambda h: h["ts"])
        ends = [h["ts"] + h["dur"] for h in last.values()]
        assert max(ends) - min(ends) < 20_000
        end = min(ends)
        open_view(page, f"{url}/?start={end - 300_000}&end={end + 100_000}")
        for rank in (0, 7):
            hit = last[rank]
            click_visible_event(page, {**hit, "ts": max(hit["ts"], end - 250_000), "dur": 200_000})
            assert page.locator(".panel .event-name").inner_text().startswith("ncclKernel_AllReduce")
            assert f"rank {rank} ·" in page.locator('[data-panel="details"] p.muted').first.inner_text()
        shot(page, "dlrm-allreduce-aligned")
        # a runtime -> device chain: a launch on rank 3 and the kernel it started
        launch = api(url, "/api/search?q=cudaLaunchKernel%20rank%3A3")["hits"][0]
        kernel = api(url, f"/api/flows/{launch['id']}")["downstream"][0]
        open_view(page, f"{url}/?start={launch['ts'] - 20_000}&end={kernel['ts'] + kernel['dur'] + 20_000}")
        before = arrow_pixels(page)
        click_visible_event(page, launch)
        assert page.locator(".panel .event-name").inner_text() == "cudaLaunchKernel"
        details = page.locator('[data-panel="details"]').inner_text()
        assert "cuda_runtime" in details and "correlation" in details
        assert "rank 3 · thread" in details and "· runtime" in details  # the thread's runtime track, by name
        assert arrow_pixels(page) > before + 10  # the arrow to the kernel is drawn
        page.click('[data-tab="dependencies"]')
        deps = page.locator('[data-panel="dependencies"]')
        assert "downstream events (1)" in deps.inner_text().lower() and "\tdevice\t" in deps.inner_text()
        # the launch's External id is its correlation id in these traces: it is bound to its enclosing op
        assert "upstream events (1)" in deps.inner_text().lower() and "aten::" in deps.inner_text()
        shot(page, "dlrm-dependency-chain")
        deps.locator("tr.clickable", has_text=kernel["name"][:40]).first.click()
        idle(page)
        page.click('[data-tab="details"]')
        assert page.locator(".panel .event-name").inner_text() == kernel["name"]
        assert "kernel" in page.locator('[data-panel="details"]').inner_text()


MEMORY_CAPTURE = '''
import sys
import torch
from torch.profiler import profile
import kinetoscope
from kinetoscope import ProfileConfig, ProfileMode, Profiler

def train_step(model, x):
    loss = model(x).square().mean()
    loss.backward()

model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256))
x = torch.randn(64, 256)
train_step(model, x)  # warm-up
kinetoscope.memory.record_memory_history()
config = ProfileConfig(modes=[ProfileMode.RUNTIME, ProfileMode.HOST_MEMORY], profile_output_dir=sys.argv[1])
exporter = Profiler(config)
with profile(activities=kinetoscope.activities(), experimental_config=config, on_trace_ready=exporter.export_trace,
             with_stack=True, profile_memory=True):
    for _ in range(2):
        train_step(model, x)
exporter.export_snapshot("memory_snapshot_rank0.pickle")
kinetoscope.memory.record_memory_history(enabled=False)
'''


@pytest.fixture(scope="module")
def memory_captured(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real CPU capture with kinetoscope's memory history and its snapshot, ingested."""
    root = tmp_path_factory.mktemp("memory")
    (root / "train.py").write_text(MEMORY_CAPTURE)
    subprocess.run([PYTHON, str(root / "train.py"), str(root / "prof")], env=python_env(), check=True,
                   capture_output=True, timeout=240)
    from kinetoscope.viewer.indexing.source import resolve_dataset

    return resolve_dataset(root / "prof", say=lambda _: None).path


@requires_cxx
def test_allocator_tab_on_a_real_snapshot(page: Any, memory_captured: Path) -> None:
    index = ViewerIndex.open(Dataset(memory_captured))
    with running_server(index) as url:
        (source,) = api(url, "/api/memory/sources")
        assert source["count"] > 10
        allocations = api(url, f"/api/memory/allocations?run={source['run']}&rank=0&device={source['device']}")
        open_view(page, url + "/?page=memory")
        box = page.locator("canvas.alloc-canvas").bounding_box()
        spots = ((x, y) for y in range(int(box["height"]) - 40, 20, -10) for x in range(80, int(box["width"]), 30))
        spot = next(s for s in spots if hover_says(page, box["x"] + s[0], box["y"] + s[1], "train_step"))
        tip = page.locator(".memory-page .tooltip").inner_text()
        assert "allocated at" in tip and "train.py" in tip  # size, lifetime and the allocating Python stack
        page.mouse.move(box["x"] + spot[0] + 1, box["y"] + spot[1])  # still the same allocation: one stack
        page.wait_for_timeout(200)
        assert page.locator(".memory-page .tooltip ol.stack").count() == 1
        assert "host (CPU)" in page.locator(".memory-page select").inner_text()
        shot(page, "real-memory-allocator")
        addr = tip.split(" at ", 1)[1].split()[0]
        assert addr.startswith("0x")  # addresses read as hex, as in memory_viz and debuggers
        page.mouse.click(box["x"] + spot[0], box["y"] + spot[1])
        idle(page)
        assert "page=timeline" in page.url and "sel=" in page.url
        event = api(url, "/api/event/" + page.url.split("sel=")[1].split("&")[0])
        assert event["fields"]["layer"] == "framework"
        assert page.locator(".panel .event-name").inner_text() == event["name"]
        allocated = [a["alloc"] for a in allocations["allocations"] if int(a["addr"]) == int(addr, 16)]
        assert any(event["ts"] <= t <= event["ts"] + event["dur"] for t in allocated)  # the op running then
        shot(page, "real-memory-jump")


# Attacks a real browser can carry out: another page the user has open (on another port of
# localhost, so "same-site") tries the SQL API and looks for what this launch sent it; the one-time
# code must not linger in the address bar or in the links the page writes, and reloads and deep
# links keep working in the browser that signed in (and only there).
ATTACK_PAGE = """<!doctype html><html><body>
<img src="{viewer}/api/sql.csv?q=SELECT%20repeat('x',%2010)">
<script>
fetch("{viewer}/api/sql", {{method: "POST", mode: "no-cors", credentials: "include",
  headers: {{"Content-Type": "text/plain"}}, body: JSON.stringify({{q: "SELECT 42"}})}});
const f = document.createElement("form"); f.method = "POST"; f.action = "{viewer}/api/sql";
f.enctype = "text/plain"; f.target = "sink"; document.body.append(f);
const i = document.createElement("iframe"); i.name = "sink"; document.body.append(i); f.submit();
</script></body></html>"""


@pytest.fixture
def guarded(multirank: ViewerIndex, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, list[str], Access]]:
    ran: list[str] = []
    real = SqlRunner.run
    monkeypatch.setattr(SqlRunner, "run", lambda self, sql, **kw: (ran.append(sql), real(self, sql, **kw))[1])
    access = Access()
    with running_server(multirank, access=access) as url:
        yield url, ran, access


@pytest.fixture
def attacker(guarded: tuple[str, list[str], Access]) -> Iterator[tuple[str, list[str]]]:
    """Another local server: its page, and the Cookie headers the browser sent it."""
    page = ATTACK_PAGE.format(viewer=guarded[0]).encode()
    cookies: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            cookies.append(self.headers.get("Cookie") or "")
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/", cookies
    server.shutdown()


def test_a_page_on_another_local_port_cannot_run_sql_nor_receives_anything(
        browser: Any, guarded: tuple[str, list[str], Access], attacker: tuple[str, list[str]]) -> None:
    url, ran, access = guarded
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{url}/?code={access.new_code()}")  # the user opened the viewer: signed in
    idle(page)
    assert page.locator(".fatal").count() == 0
    page.goto(attacker[0])
    time.sleep(1.5)
    assert context.cookies() == []
    context.close()
    assert ran == [] and attacker[1] and set(attacker[1]) == {""}


def test_the_code_leaves_the_address_bar_and_deep_links_keep_working(
        browser: Any, guarded: tuple[str, list[str], Access]) -> None:
    url, _, access = guarded
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    page = context.new_page()
    code = access.new_code()
    page.goto(f"{url}/?code={code}&page=timeline")
    idle(page)
    assert "code" not in page.url and "page=timeline" in page.url and page.locator(".fatal").count() == 0
    page.click('nav a[data-page="sql"]')
    idle(page)
    assert "code" not in page.url and code not in page.evaluate("document.body.innerHTML")
    page.reload()  # the session this page keeps opens it again
    idle(page)
    assert page.locator(".fatal").count() == 0 and page.locator(".sql-layout").count() == 1
    deep = page.url
    other_tab = context.new_page()
    other_tab.goto(deep)  # a deep link opened in the same browser
    idle(other_tab)
    assert other_tab.locator(".fatal").count() == 0
    elsewhere = browser.new_context().new_page()  # another browser: the link gives nothing
    elsewhere.goto(deep)
    elsewhere.wait_for_selector(".fatal.signin")
    assert "terminal" in elsewhere.locator(".fatal").inner_text()
    elsewhere.context.close()
    used = context.new_page()
    used.goto(f"{url}/?code={code}")  # a used code in a browser that signed in: still its session
    idle(used)
    assert used.locator(".fatal").count() == 0
    context.close()


def test_the_sql_pages_csv_download_carries_the_session(browser: Any, guarded: tuple[str, list[str], Access]) -> None:
    url, ran, access = guarded
    context = browser.new_context(accept_downloads=True)
    page = context.new_page()
    page.goto(f"{url}/?code={access.new_code()}&page=sql&sql=SELECT%2042%20AS%20answer")
    idle(page)
    with page.expect_download() as download:
        page.click("text=Download CSV")
    assert Path(download.value.path()).read_text().split() == ["answer", "42"]
    assert "SELECT 42 AS answer" in ran
    context.close()


def test_details_of_a_compiled_kernel_show_its_graph_nodes_and_model_lines(page: Any, tmp_path: Path) -> None:
    from ..ingest.rows.test_kernels import INDEX, SOURCE, TRITON, session_with_index, viewer_of

    session_with_index(tmp_path / "prof", json.dumps(INDEX))
    viewer = viewer_of(tmp_path)
    (event_id,), = viewer.cursor().execute("SELECT id FROM events WHERE name = ?", [TRITON]).fetchall()
    with running_server(viewer) as url:
        open_view(page, f"{url}/?sel={event_id}")
        page.wait_for_selector('[data-panel="details"] .provenance')
        section = page.locator('[data-panel="details"] .provenance')
        section.scroll_into_view_if_needed()
        text = section.inner_text()
        shot(page, "details-provenance")
    assert "kernels/k1/k1.py" in text and "relu" in text
    assert f"model.py:{SOURCE['line']} forward" in text and SOURCE["code"] in text

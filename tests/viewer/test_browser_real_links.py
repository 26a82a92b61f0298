"""On a real CPU torch.profiler capture made here (no kinetoscope, no snapshot): Summary rows open the
timeline on their example event, and the Memory page rebuilds allocations from the trace's [memory]
events. Screenshots in artifacts/."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

import kinetoscope
from kinetoscope.importer import trace_cache
from kinetoscope.viewer.indexing.index import ViewerIndex

from ..conftest import PYTHON, python_env
from .helpers import running_server
from .test_browser import api, idle, open_view, shot

pytestmark = pytest.mark.slow

CAPTURE = '''
import sys
import torch
from torch.profiler import ProfilerActivity, profile

model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 256))
x = torch.randn(64, 256)
with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=True, with_stack=True) as prof:
    for _ in range(3):
        model(x).square().mean().backward()
prof.export_chrome_trace(sys.argv[1])
'''


@pytest.fixture(scope="module")
def real_index(tmp_path_factory: pytest.TempPathFactory) -> ViewerIndex:
    root = tmp_path_factory.mktemp("real_links")
    (root / "capture.py").write_text(CAPTURE)
    trace = root / "worker0.pt.trace.json"
    subprocess.run([PYTHON, str(root / "capture.py"), str(trace)], env=python_env(), check=True,
                   capture_output=True, timeout=240)
    return ViewerIndex.open(kinetoscope.open(trace_cache.profile_for([trace])))


def test_top_ops_rows_open_their_call_with_most_self_time(page: Any, real_index: ViewerIndex) -> None:
    with running_server(real_index) as url:
        top = next(a for a in api(url, "/api/summary")["analyses"] if a["name"] == "top_ops")["rows"][0]
        most = real_index.cursor().execute(
            "SELECT max(self_ns) FROM events WHERE name = ? AND kind = 'op'", [top["name"]]).fetchone()
        chosen = real_index.cursor().execute("SELECT self_ns FROM events WHERE id = ?", [top["example_id"]]).fetchone()
        assert most and chosen and chosen[0] == most[0]  # (a folded repeat may add its child's time; not here)
        open_view(page, url + "/?page=summary")
        page.locator('.analysis[data-analysis="top_ops"] tbody tr').first.locator("a.row-link").click()
        idle(page)
        assert page.locator(".panel .event-name").inner_text() == top["name"]
        shot(page, "real-top-op-opened")
        page.goto("about:blank")


def test_memory_page_rebuilds_allocations_from_memory_events(page: Any, real_index: ViewerIndex) -> None:
    with running_server(real_index) as url:
        sources = api(url, "/api/memory/sources")
        assert sources and all(s["origin"] == "events" for s in sources)
        source = max(sources, key=lambda s: s["largest_bytes"])
        assert source["device"] == -1 and source["count"] > 20  # CPU blocks: activations, gradients
        open_view(page, url + "/?page=memory")
        assert "from [memory] events" in page.locator(".memory-page select").inner_text()
        assert "rebuilt from the trace's [memory] events" in page.locator(".alloc-note").inner_text()
        listed = page.locator(".largest-out tbody tr")
        assert listed.count() == min(source["count"], 200)
        biggest = listed.first.locator("td").first.inner_text()
        assert biggest.endswith(("KiB", "MiB"))
        # with_stack=True: each block has the Python frames active when it was allocated
        query = f"/api/memory/largest?run={source['run']}&rank={source['rank']}&device={source['device']}"
        from_script = api(url, query + "&stack=capture.py")
        assert 0 < from_script["matching"] <= source["count"]
        assert all("capture.py" in a["stack"] for a in from_script["allocations"])
        page.fill("input.stack-filter", "capture.py")
        idle(page)
        says = f"{from_script['matching']:,} allocation(s) match"
        assert page.locator(".largest-out p").inner_text().startswith(says)
        assert "capture.py" in (page.locator(".largest-out .stack-text").first.get_attribute("title") or "")
        shot(page, "real-memory-from-events")
        page.goto("about:blank")  # nothing left asking the server once it stops

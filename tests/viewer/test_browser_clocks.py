"""'Align clocks' in a real browser, on the public DLRM ranks with rank 3's clock set 5 ms ahead."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex

from ..conftest import PYTHON, python_env
from ..ingest.helpers import DATA
from . import test_browser
from .helpers import running_server
from .test_browser import api, click_visible_event, open_view, shot

pytestmark = pytest.mark.slow
SHIFT_US = 5_000


@pytest.fixture(scope="module")
def shifted_dlrm(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tests/data/dlrm_8rank with every timestamp of rank 3 moved +5 ms, imported and ingested."""
    root = tmp_path_factory.mktemp("dlrm_shifted")
    traces = root / "traces"
    shutil.copytree(DATA / "dlrm_8rank", traces)
    shifted = next(traces.glob("worker3_*.json.gz"))
    document = json.loads(gzip.decompress(shifted.read_bytes()))
    for event in document["traceEvents"]:
        if isinstance(event.get("ts"), (int, float)):
            event["ts"] += SHIFT_US
    shifted.write_bytes(gzip.compress(json.dumps(document).encode()))
    subprocess.run([PYTHON, "-m", "kinetoscope", "import", str(traces), "--out", str(root / "prof")],
                   env=python_env(), check=True, capture_output=True, timeout=120)
    from kinetoscope.viewer.indexing.source import resolve_dataset

    return resolve_dataset(root / "prof", say=lambda _: None).path


def _last_allreduce(url: str, rank: int) -> dict[str, Any]:
    hits = api(url, f"/api/search?q=AllReduce%20rank%3A{rank}%20cat%3Akernel")["hits"]
    return dict(max(hits, key=lambda h: h["ts"]))


def _details(page: Any) -> tuple[str, str]:
    return (page.locator(".panel .event-name").inner_text(),
            page.locator('[data-panel="details"] p.muted').first.inner_text())


def _click(page: Any, hit: dict[str, Any], ts: int, end: int) -> None:
    """Clicks `hit` drawn at `ts`, within the part of it the view [end - 300 µs, end + 100 µs) shows."""
    start = max(ts, end - 250_000)
    click_visible_event(page, {**hit, "ts": start, "dur": min(200_000, ts + hit["dur"] - start)})


def test_align_clocks_lines_up_the_last_allreduce_and_is_kept_in_the_link(page: Any, shifted_dlrm: Path) -> None:
    index = ViewerIndex.open(Dataset(shifted_dlrm))
    with running_server(index) as url:
        clocks = {c["rank"]: c for c in api(url, "/api/meta")["rank_clocks"]}
        assert abs(clocks[3]["offset_ns"] - SHIFT_US * 1000) < 10_000 and clocks[3]["uncertainty_ns"] < 10_000
        assert all(abs(clocks[r]["offset_ns"]) < 10_000 for r in range(8) if r != 3)
        last = {rank: _last_allreduce(url, rank) for rank in range(8)}
        raw_ends = [h["ts"] + h["dur"] for h in last.values()]
        assert raw_ends[3] - min(raw_ends) > 4_900_000  # as recorded: rank 3's 5 ms late
        aligned_ends = [h["ts"] + h["dur"] - clocks[r]["offset_ns"] for r, h in last.items()]
        assert max(aligned_ends) - min(aligned_ends) < 10_000  # the one collective leaves at one time
        end = last[0]["ts"] + last[0]["dur"]
        aligned_ts3 = last[3]["ts"] - clocks[3]["offset_ns"]

        open_view(page, f"{url}/?start={end - 300_000}&end={end + 100_000}")
        toggle = page.get_by_label("Align the ranks' clocks")
        assert not toggle.is_checked()  # one host (none recorded): off by default
        header = page.locator(".label.group", has_text="rank 3").first
        assert "(not aligned)" in header.inner_text()
        _click(page, last[3], aligned_ts3, end)  # where it would be on rank 0's clock: not there yet
        assert page.locator(".panel .event-name").count() == 0 or _details(page)[0] != last[3]["name"]

        toggle.check()
        test_browser.idle(page)
        assert re.search(r"clock −4\.99\d ms ±\d+(\.\d)? µs \(aligned\)", header.inner_text())
        assert "clock" not in page.locator(".label.group", has_text="rank 0").first.inner_text()
        assert parse_qs(urlparse(page.url).query)["clocks"] == ["1"]
        for rank, ts in ((3, aligned_ts3), (0, last[0]["ts"])):
            _click(page, last[rank], ts, end)
            name, where = _details(page)
            assert name.startswith("ncclKernel_AllReduce") and f"rank {rank} ·" in where
        shot(page, "dlrm-clocks-aligned")
        # the link keeps the toggle, and the selection is drawn (and described) at its aligned time
        open_view(page, page.url)
        assert page.get_by_label("Align the ranks' clocks").is_checked()
        assert "(aligned)" in page.locator(".label.group", has_text="rank 3").first.inner_text()
        # an area over rank 3's stream where its AllReduce is drawn: summarised as drawn
        track3 = last[3]["track"]
        area = f"{aligned_ts3 + 100_000},{aligned_ts3 + 200_000},{track3}"
        open_view(page, f"{url}/?start={end - 300_000}&end={end + 100_000}&clocks=1&area={area}")
        rows = page.locator('[data-panel="selection"] .area-table tbody tr')
        rows.first.wait_for()
        assert any(t.startswith("ncclKernel_AllReduce") for t in rows.all_inner_texts())
        assert page.locator(".clock-caveat").count() == 0


def test_a_selected_collective_is_linked_on_every_rank_and_the_ranks_align_on_it(page: Any,
                                                                                  shifted_dlrm: Path) -> None:
    index = ViewerIndex.open(Dataset(shifted_dlrm))
    with running_server(index) as url:
        last = {rank: _last_allreduce(url, rank) for rank in range(8)}
        instance = api(url, f"/api/collective/{last[0]['id']}")
        assert sorted(r["id"] for r in instance["ranks"]) == sorted(h["id"] for h in last.values())
        assert instance["collective"] == "allreduce"
        skew = {r["rank"]: r["skew_ns"] for r in instance["ranks"]}
        starts = {r: h["ts"] for r, h in last.items()}
        assert skew == {r: starts[r] - min(starts.values()) for r in range(8)}  # on the recorded clocks
        assert api(url, "/api/collective/1")["ranks"] == [] and "reason" in api(url, "/api/collective/1")
        end = last[0]["ts"] + last[0]["dur"]

        open_view(page, f"{url}/?start={end - 300_000}&end={end + 100_000}")
        _click(page, last[0], last[0]["ts"], end)
        page.wait_for_selector(".collective-links table")
        assert page.locator(".timeline").get_attribute("data-linked") == "8"  # outlined on every rank
        listed = page.locator(".collective-links tbody tr")
        assert listed.count() == 8 and listed.nth(3).locator("td").first.inner_text() == "3"
        assert "ms" in listed.nth(3).locator("td").nth(2).inner_text()  # rank 3 "arrives" 5 ms late as recorded
        shot(page, "dlrm-collective-linked")

        page.get_by_role("button", name="align ranks on its ends").click()
        test_browser.idle(page)
        assert parse_qs(urlparse(page.url).query)["calign"] == [f"{last[0]['id']},end"]
        header = page.locator(".label.group", has_text="rank 3").first
        assert "(aligned on allreduce #" in header.inner_text() and "ends)" in header.inner_text()
        shift3 = end - (last[3]["ts"] + last[3]["dur"])
        _click(page, last[3], last[3]["ts"] + shift3, end)  # rank 3's row now ends with rank 0's
        name, where = _details(page)
        assert name.startswith("ncclKernel_AllReduce") and "rank 3 ·" in where
        assert page.locator(".timeline").get_attribute("data-linked") == "8"
        # the link restores the alignment
        open_view(page, page.url)
        page.wait_for_function("[...document.querySelectorAll('.label.group')]"
                               ".some(e => e.textContent.includes('aligned on'))")
        page.wait_for_selector(".collective-align button.active")
        assert page.locator(".collective-align button.active").inner_text() == "align ranks on its ends"
        shot(page, "dlrm-collective-aligned")

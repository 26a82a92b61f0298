"""The Memory page's allocator segment view in Chromium, on the public CUDA snapshot: a row per segment with
its blocks by state, hover with sizes and stack, earlier states from the history chart and the slider
(screenshots in artifacts/)."""

from __future__ import annotations

import pickle
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import kinetoscope
from kinetoscope.viewer.indexing.index import ViewerIndex

from ..kineto_gen import BASE_NS, TrainingSpec, write_profile
from .allocations.test_memory_segments import REAL
from .helpers import running_server
from .test_browser import api, idle, open_view, shot

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, Any]]]:
    """A generated one-rank run whose session carries the public CUDA snapshot (61 segments, 23,105 trace
    entries), its clock moved so the trace starts 100 µs into the run (it was recorded on another day)."""
    if not REAL.exists():
        pytest.skip("needs ../shared/datasets/public-traces")
    root = tmp_path_factory.mktemp("segments")
    shutil.copy(REAL, root / "memory.pickle")
    snapshot = pickle.loads((root / "memory.pickle").read_bytes())  # plain dicts and lists: no code runs
    shift = snapshot["device_traces"][0][0]["time_us"] - (BASE_NS // 1000 + 100)
    for entry in snapshot["device_traces"][0]:
        entry["time_us"] -= shift
    (session,) = write_profile(root / "prof", TrainingSpec(ranks=1, layers=2, problems=False))
    (session / "memory_snapshot_rank0.pickle").write_bytes(pickle.dumps(snapshot, protocol=4))
    index = ViewerIndex.open(kinetoscope.open(root / "prof"))
    with running_server(index) as url:
        yield url, snapshot


def _segments(page: Any) -> int:
    return int(page.locator("canvas.seg-canvas").get_attribute("data-segments"))


def _open(page: Any, url: str) -> None:
    open_view(page, url + "/?page=memory")
    page.click('[data-subtab="segments"]')
    idle(page)


def test_each_segment_is_a_row_of_its_blocks_and_hover_tells_a_block(page: Any, served: tuple[str, Any]) -> None:
    url, snapshot = served
    _open(page, url)
    assert _segments(page) == len(snapshot["segments"]) == 61
    reserved = sum(s["total_size"] for s in snapshot["segments"]) / 2**30
    assert page.locator(".seg-summary").inner_text().startswith(f"reserved {reserved:.1f} GiB in 61 segments")
    assert "at the snapshot" in page.locator(".seg-at").inner_text()
    # hover along the rows until an allocated block with its Python stack is under the pointer
    box = page.locator("canvas.seg-canvas").bounding_box()
    found = ""
    for row in range(0, 61, 3):
        for x in range(240, int(box["width"]) - 160, 40):
            page.mouse.move(box["x"] + x, box["y"] + row * 20 + 10)
            tip = page.locator(".segments-out .tooltip")
            if tip.is_visible() and " allocated at 0x" in tip.inner_text() and "decomfl_main.py" in tip.inner_text():
                found = tip.inner_text()
                break
        if found:
            break
    assert "requested" in found and "segment 0x" in found and "largest" in found
    shot(page, "segments-snapshot-hover")
    # on a segment's label: the segment, and the stack that reserved it
    page.mouse.move(box["x"] + 60, box["y"] + 10)
    assert "reserved by:" in page.locator(".segments-out .tooltip").inner_text()


def test_the_history_chart_and_slider_show_earlier_states(page: Any, served: tuple[str, Any]) -> None:
    url, _ = served
    _open(page, url)
    out = page.locator(".segments-out")
    # a click a quarter into the reserved/active chart: the state then, as the API gives it
    chart = page.locator("canvas.seg-history").bounding_box()
    page.mouse.click(chart["x"] + 60 + (chart["width"] - 70) * 0.25, chart["y"] + 40)
    idle(page)
    at = int(out.get_attribute("data-at"))
    state = api(url, f"/api/memory/segments?run=prof&rank=0&device=0&at_ns={at}")
    assert 0 < _segments(page) == len(state["segments"]) < 61 and state["mismatches"] == 0
    assert "before the snapshot" in page.locator(".seg-at").inner_text()
    assert "Rebuilt by undoing" in page.locator(".seg-notes").inner_text()
    shot(page, "segments-earlier")
    # the slider's start lies before the first entry: nothing reserved yet, and the history is incomplete
    page.locator("input.seg-time").evaluate(
        "el => { el.value = el.min; el.dispatchEvent(new Event('change')); }")
    idle(page)
    assert _segments(page) == 0
    assert page.locator(".seg-incomplete").inner_text().startswith("History is incomplete")
    shot(page, "segments-before-history")
    # step entry by entry from there: the first entries reserve the first segments
    assert page.locator(".seg-entry").inner_text() == "before the first trace entry"
    page.click("button.seg-next")
    idle(page)
    assert page.locator(".seg-entry").inner_text().startswith("last entry: #0 segment_alloc 148 MiB")
    assert _segments(page) == 1
    page.click("button.seg-next")
    idle(page)
    assert page.locator(".seg-entry").inner_text().startswith("last entry: #1 ")
    page.click("button.seg-prev")
    idle(page)
    assert page.locator(".seg-entry").inner_text().startswith("last entry: #0 ")
    page.click("button.seg-latest")
    idle(page)
    assert _segments(page) == 61 and out.get_attribute("data-at") == "snapshot"
    assert page.locator("button.seg-next").is_disabled()


def test_a_dataset_without_segments_says_where_they_come_from(page: Any, tmp_path: Path) -> None:
    (session,) = write_profile(tmp_path / "prof", TrainingSpec(ranks=1, layers=2, problems=False))
    for snapshot in session.glob("*.pickle"):
        snapshot.unlink()
    with running_server(ViewerIndex.open(kinetoscope.open(tmp_path / "prof"))) as url:
        _open(page, url)
        assert "CUDA memory snapshot" in page.locator(".memory-page .empty").inner_text()


def test_thousands_of_segments_fit_on_thinner_rows(page: Any, tmp_path: Path) -> None:
    # GIVEN a snapshot of 3,000 segments of 2 MiB, each half allocated (a canvas is at most ~32,000 px tall)
    mib = 2**20
    segments = [{"device": 0, "address": (1 << 40) + i * 2 * mib, "total_size": 2 * mib, "segment_type": "small",
                 "blocks": [{"size": mib, "requested_size": mib, "state": "active_allocated"},
                            {"size": mib, "requested_size": mib, "state": "inactive"}]} for i in range(3000)]
    (session,) = write_profile(tmp_path / "prof", TrainingSpec(ranks=1, layers=2, problems=False))
    (session / "memory_snapshot_rank0.pickle").write_bytes(pickle.dumps({"segments": segments, "device_traces": [[]]}))
    with running_server(ViewerIndex.open(kinetoscope.open(tmp_path / "prof"))) as url:
        _open(page, url)
        # THEN every segment is drawn, on rows thin enough to fit, and hover still finds a block
        assert _segments(page) == 3000
        canvas = page.locator("canvas.seg-canvas")
        height = canvas.evaluate("el => el.clientHeight")
        assert 3000 * 4 <= height <= 30_000
        box = canvas.bounding_box()
        page.mouse.move(box["x"] + 240, box["y"] + 5)
        assert "1.0 MiB allocated" in page.locator(".segments-out .tooltip").inner_text()
        assert "no trace entries" in page.locator(".seg-notes").inner_text()
        assert not page.locator("canvas.seg-history").is_visible()
        shot(page, "segments-thousands")


def test_a_shift_click_on_the_allocator_chart_opens_the_segments_then(page: Any, served: tuple[str, Any]) -> None:
    url, _ = served
    open_view(page, url + "/?page=memory")
    box = page.locator("canvas.alloc-canvas").bounding_box()
    page.keyboard.down("Shift")
    page.mouse.click(box["x"] + box["width"] * 0.6, box["y"] + box["height"] / 2)
    page.keyboard.up("Shift")
    idle(page)
    assert page.locator('[data-subtab="segments"]').get_attribute("class") == "active"
    at = int(page.locator(".segments-out").get_attribute("data-at"))
    state = api(url, f"/api/memory/segments?run=prof&rank=0&device=0&at_ns={at}")
    assert state["history"]["first_ns"] < at < state["history"]["last_ns"]
    assert _segments(page) == len(state["segments"]) > 0
    assert "page=timeline" not in page.url  # the shift-click opened no op


@pytest.fixture(scope="module")
def far_clock(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The public CUDA snapshot as recorded (its clock is another day's), beside a generated one-rank run."""
    if not REAL.exists():
        pytest.skip("needs ../shared/datasets/public-traces")
    root = tmp_path_factory.mktemp("far-segments")
    (session,) = write_profile(root / "prof", TrainingSpec(ranks=1, layers=2, problems=False))
    shutil.copy(REAL, session / "memory_snapshot_rank0.pickle")
    with running_server(ViewerIndex.open(kinetoscope.open(root / "prof"))) as url:
        yield url


def test_a_snapshot_whose_clock_is_far_from_the_trace_reads_and_slides(page: Any, far_clock: str) -> None:
    # GIVEN a snapshot recorded on another day than the trace beside it
    _open(page, far_clock)
    # WHEN the slider is moved to its start and then a step later
    slider = page.locator("input.seg-time")
    slider.evaluate("el => { el.value = el.min; el.dispatchEvent(new Event('input'));"
                    " el.dispatchEvent(new Event('change')); }")
    idle(page)
    page.click("button.seg-next")
    idle(page)
    # THEN no error is thrown (the page fixture fails on one), and no time reads as millions of seconds
    texts = " ".join(page.locator(s).inner_text() for s in (".seg-at", ".seg-entry", ".seg-notes"))
    assert not re.search(r"-?\d{5,}(\.\d+)? s\b", texts), texts
    assert page.locator(".seg-entry").inner_text().startswith("last entry: #0 ")
    shot(page, "segments-far-clock")


SEED_SNAPSHOT = Path(__file__).resolve().parents[1] / "data" / "fuzz-seed" / "memory_snapshot_rank0.pickle"
CENTURIES_NS = 200 * 365 * 86_400 * 10**9  # past the API's 2**62 ns (146 years) from the run's start


def test_a_snapshot_centuries_from_the_trace_shows_its_state_without_an_error(page: Any, tmp_path: Path) -> None:
    # GIVEN a snapshot (4 segments, 70 trace entries) whose clock reads 200 years after the run's start
    snapshot = pickle.loads(SEED_SNAPSHOT.read_bytes())  # our own capture (tests/fuzz/make_seeds.py)
    shift_us = BASE_NS // 1000 + CENTURIES_NS // 1000 - snapshot["device_traces"][0][0]["time_us"]
    for entry in snapshot["device_traces"][0]:
        entry["time_us"] += shift_us
    (session,) = write_profile(tmp_path / "prof", TrainingSpec(ranks=1, layers=2, problems=False))
    (session / "memory_snapshot_rank0.pickle").write_bytes(pickle.dumps(snapshot, protocol=4))
    with running_server(ViewerIndex.open(kinetoscope.open(tmp_path / "prof"))) as url:
        _open(page, url)
        # WHEN the slider is moved to its start and the history chart is clicked
        page.locator("input.seg-time").evaluate(
            "el => { el.value = el.min; el.dispatchEvent(new Event('input')); el.dispatchEvent(new Event('change')); }")
        chart = page.locator("canvas.seg-history").bounding_box()
        page.mouse.click(chart["x"] + chart["width"] / 2, chart["y"] + 40)
        idle(page)
        # THEN no request is refused and no error thrown (the page fixture fails on either): the state at
        # the snapshot stays, the slider and the steps are off, and a note says why
        assert _segments(page) == len(snapshot["segments"]) == 4
        assert page.locator(".segments-out").get_attribute("data-at") == "snapshot"
        assert page.locator("input.seg-time").is_disabled() and page.locator("button.seg-prev").is_disabled()
        notes = page.locator(".seg-notes").inner_text()
        assert "starts 200 years after the run's start" in notes and "too far to step through" in notes
        assert page.locator(".seg-at").inner_text() == "at the snapshot (after the last trace entry)"

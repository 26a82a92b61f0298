"""Compare mode in Chromium on a real pair (a CPU training step, and the same step with an extra
matmul): both timelines draw, zoom and pan follow each other on the aligned step, and a delta row
highlights its events on both sides (screenshots in artifacts/viewer/)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from kinetoscope.viewer.serving.pairing import ComparePair

from .compare_pair import captured_pair
from .helpers import running_server
from .test_browser import idle, open_view, shot

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> ComparePair:
    return captured_pair(tmp_path_factory.mktemp("compare-browser"))


@pytest.fixture(scope="module")
def compare_server(pair: ComparePair) -> Iterator[str]:
    with running_server(pair.base, pair=pair) as url:
        yield url


def views(page: Any) -> dict[str, Any]:
    """Both timelines' windows and each side's start of the aligned step (ns from its run start)."""
    found: dict[str, Any] = page.evaluate("""() => {
        const c = window.kinetoscope.compare;
        const start = (side) => c.report[side].steps.find((s) => s.step === c.step).start_ns;
        return {step: c.step, base: [c.base.vp.start, c.base.vp.end], new: [c.next.vp.start, c.next.vp.end],
                base_step: start("base"), new_step: start("new"),
                matches: [c.base.matchCount, c.next.matchCount]};
    }""")
    return found


def assert_aligned(found: dict[str, Any]) -> None:
    base_offsets = [t - found["base_step"] for t in found["base"]]
    new_offsets = [t - found["new_step"] for t in found["new"]]
    assert new_offsets == pytest.approx(base_offsets, abs=2)


def test_compare_mode_draws_both_sides_zooms_together_and_highlights_a_row(page: Any, compare_server: str) -> None:
    page.set_default_timeout(120_000)  # the first /api/compare runs the comparison
    open_view(page, f"{compare_server}/?page=compare")
    page.wait_for_selector(".compare-side canvas.tl-canvas >> nth=1")
    idle(page)
    # THEN both timelines drew slices, and NEW shows the first common step where BASE does
    for side in ("base", "new"):
        status = page.locator(f'.compare-side[data-side="{side}"] .tl-status').inner_text()
        assert int(status.split()[0].replace(",", "")) > 0, status
    verdict = page.locator(".compare-verdict").inner_text()
    assert verdict.startswith("median step ") and "→" in verdict and "%" in verdict, verdict
    found = views(page)
    assert found["step"] == 1
    assert_aligned(found)
    shot(page, "compare-aligned")
    # WHEN BASE zooms in (its + button), NEW follows; WHEN NEW pans (D on its canvas), BASE follows
    span = found["base"][1] - found["base"][0]
    page.locator('.compare-side[data-side="base"] button[title="Zoom in (W)"]').click()
    idle(page)
    zoomed = views(page)
    assert zoomed["base"][1] - zoomed["base"][0] == pytest.approx(span / 2, rel=0.01)
    assert_aligned(zoomed)
    new_canvas = page.locator('.compare-side[data-side="new"] canvas.tl-canvas')
    new_canvas.focus()
    page.keyboard.press("d")
    idle(page)
    panned = views(page)
    assert panned["new"][0] > zoomed["new"][0]
    assert_aligned(panned)
    # WHEN another step is chosen, both sides move onto it
    page.select_option("select.compare-step", "3")
    idle(page)
    third = views(page)
    assert third["step"] == 3 and third["base_step"] > found["base_step"]
    assert_aligned(third)
    rows_highlight_on_both_sides(page)


def rows_highlight_on_both_sides(page: Any) -> None:
    """Delta rows of the ops, kernels and modules tables; a row highlights its name on both sides."""
    # WHEN the first delta row (aten::mm, matched: one more call a step in NEW) is clicked
    first = page.locator(".compare-rows tbody tr").first
    assert "aten::mm" in first.inner_text() and "matched" in first.inner_text()
    first.click()
    idle(page)
    # THEN the row is picked and aten::mm's events in view are highlighted on both sides
    assert "picked" in (first.get_attribute("class") or "")
    base_hits, new_hits = views(page)["matches"]
    assert base_hits > 0 and new_hits > 0
    # AND a row of another name highlights that name instead (exact names, not substrings)
    page.select_option("select.compare-table", "kernels")
    idle(page)
    assert page.locator(".compare-rows tbody tr").count() == 0  # CPU: no device work
    page.select_option("select.compare-table", "modules")
    idle(page)
    assert page.locator(".compare-rows tbody tr").all_inner_texts() != []  # captured without with_stack:
    assert "(no module)" in page.locator(".compare-rows tbody tr").first.inner_text()  # no module frames
    page.select_option("select.compare-table", "ops")
    idle(page)
    addmm = page.locator(".compare-rows tbody tr", has_text="aten::addmm").first
    addmm.click()
    idle(page)
    assert "picked" not in (first.get_attribute("class") or "")
    addmm_hits = views(page)["matches"]
    assert addmm_hits[0] > 0 and addmm_hits[1] > 0
    shot(page, "compare-row-picked")


@pytest.fixture(scope="module")
def snapshot_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Two generated runs with allocator snapshots: 4 linear layers, and 6 (2 MiB more weights from build_model)."""
    from kinetoscope.query.dataset import Dataset
    from kinetoscope.viewer.indexing.index import ViewerIndex

    from ..kineto_gen import TrainingSpec, write_dataset

    root = tmp_path_factory.mktemp("compare-memory")
    four = write_dataset(root / "four", TrainingSpec(ranks=1, layers=4, problems=False))
    six = write_dataset(root / "six", TrainingSpec(ranks=1, layers=6, problems=False))
    pair = ComparePair(ViewerIndex.open(Dataset(four)), ViewerIndex.open(Dataset(six)), "four", "six")
    with running_server(pair.base, pair=pair) as url:
        yield url


def test_compare_mode_shows_both_memory_peaks_and_the_stacks_that_grew(page: Any, snapshot_server: str) -> None:
    page.set_default_timeout(120_000)
    open_view(page, f"{snapshot_server}/?page=compare")
    page.wait_for_selector(".compare-table")
    page.select_option(".compare-table", "memory")
    memory = page.locator(".compare-memory")
    memory.wait_for()
    text = memory.inner_text()
    # THEN each side's peak, and build_model's stack grown by exactly its two extra 1 MiB weights
    assert "peak " in text and "→" in text and "Grew at the peak" in text
    row = memory.locator("tr", has_text="build_model (model.py:12)")
    assert row.count() == 1 and row.locator("td").nth(3).inner_text() == "+2.0 MiB", row.inner_text()
    shot(page, "compare-memory")

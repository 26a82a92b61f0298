"""Compare mode's answer in Chromium, served by a real ``kinetoscope view BASE --compare NEW`` on a
generated pair (NEW's first forward GEMM 20 % of the step slower): the verdict with its confidence
and comparability and the waterfall above the timelines, ops and kernels coloured by their delta,
and a waterfall row that jumps to its events on both sides (screenshots in artifacts/viewer/)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ..conftest import PYTHON, python_env
from .generated_pair import GEMM, generated_pair
from .test_browser import idle, shot

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def launched(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The link `kinetoscope view BASE --compare NEW` prints, while it serves."""
    base, slower = generated_pair(tmp_path_factory.mktemp("compare-verdict"))
    yield from serve(base, slower)


def serve(base: Path, new: Path) -> Iterator[str]:
    command = [PYTHON, "-m", "kinetoscope", "view", str(base), "--compare", str(new), "--no-browser", "--port", "0"]
    process = subprocess.Popen(command, env=python_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert process.stdout is not None
        for line in process.stdout:  # until the link is printed (the process then serves until stopped)
            if "kinetoscope viewer: http" in line:
                yield next(word for word in line.split() if word.startswith("http"))
                break
        else:
            pytest.fail("kinetoscope view printed no link")
    finally:
        process.terminate()
        process.wait(timeout=30)


def state(page: Any) -> dict[str, Any]:
    """Each side's view and step start, the events the last jump found, and the highlights."""
    found: dict[str, Any] = page.evaluate("""() => {
        const c = window.kinetoscope.compare;
        const start = (side) => c.report[side].steps.find((s) => s.step === c.step).start_ns;
        return {base: [c.base.vp.start, c.base.vp.end], new: [c.next.vp.start, c.next.vp.end],
                base_step: start("base"), new_step: start("new"), jumped: c.jumped,
                matches: [c.base.matchCount, c.next.matchCount],
                selected: [c.base.selected && c.base.selected.id, c.next.selected && c.next.selected.id]};
    }""")
    return found


def reddish_pixels(page: Any, side: str) -> int:
    """Pixels of a side's canvas in the slower-red of the delta colours (hue near 0, saturated)."""
    count: int = page.evaluate("""(side) => {
        const canvas = document.querySelector(`.compare-side[data-side="${side}"] canvas.tl-canvas`);
        const d = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) {
            const [r, g, b] = [d[i], d[i + 1], d[i + 2]];
            if (r > 150 && r - g > 60 && r - b > 60 && Math.abs(g - b) < 12) n++;
        }
        return n;
    }""", side)
    return count


def test_the_verdict_and_waterfall_lead_and_a_row_jumps_to_its_events_on_both_sides(page: Any, launched: str) -> None:
    page.set_default_timeout(120_000)  # the viewer prepares both sides, then the first /api/compare compares them
    page.goto(launched)
    page.wait_for_selector(".compare-answer")
    page.wait_for_selector(".compare-side canvas.tl-canvas >> nth=1")
    idle(page)
    # THEN the verdict leads: a regression, with its confidence and steps, on comparable runs
    answer = page.locator(".compare-answer").inner_text()
    assert answer.startswith("REGRESSION: step time +") and "confidence " in answer and "8 vs 8 steps" in answer, answer
    assert page.locator(".compare-comparability").inner_text().startswith("comparable")
    # AND the waterfall's first part is device compute, the slower GEMM first behind it; the step grew
    first_part = page.locator(".compare-waterfall tbody tr.part").first
    assert first_part.get_attribute("data-part") == "device_compute"
    behind = page.locator('.compare-waterfall tbody tr.behind[data-part="device_compute"]').first
    assert GEMM in behind.inner_text() and behind.inner_text().startswith("kernel")
    diff = page.evaluate("() => window.kinetoscope.compare.report.diff.waterfall")
    total_cell = page.locator(".compare-waterfall tfoot td").nth(3).inner_text()
    assert total_cell.startswith("+") and diff["total_delta_ns"] > 0
    # AND ops and kernels are coloured by their delta: the slower GEMM red on NEW, plain hues when turned off
    assert reddish_pixels(page, "new") > 0
    shot(page, "compare-verdict")
    page.locator("input.compare-tint").uncheck()
    idle(page)
    page.wait_for_timeout(100)  # the redraw is on the next animation frame
    tinted_off = reddish_pixels(page, "new")
    page.locator("input.compare-tint").check()
    page.wait_for_timeout(100)
    assert reddish_pixels(page, "new") > tinted_off
    # WHEN the GEMM's waterfall row is clicked
    behind.click()
    page.wait_for_function("() => window.kinetoscope.compare.jumped !== null")
    idle(page)
    found = state(page)
    # THEN each side shows its own GEMM of the aligned step, selected and highlighted, the views still aligned
    for side in ("base", "new"):
        event = found["jumped"][side]
        assert event["name"] == GEMM
        start, end = found[side]
        assert start <= event["ts"] and event["ts"] + event["dur"] <= end, (side, event, found[side])
    assert found["selected"] == [found["jumped"]["base"]["id"], found["jumped"]["new"]["id"]]
    assert found["matches"][0] > 0 and found["matches"][1] > 0
    base_offsets = [t - found["base_step"] for t in found["base"]]
    new_offsets = [t - found["new_step"] for t in found["new"]]
    assert new_offsets == pytest.approx(base_offsets, abs=2)
    assert found["jumped"]["new"]["dur"] > found["jumped"]["base"]["dur"]
    shot(page, "compare-verdict-jump")

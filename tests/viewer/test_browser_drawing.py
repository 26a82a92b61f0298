"""How the slice painter draws, watched in Chromium through the canvas calls of each draw: labels cut by
their measured widths (each text measured once per font), and dense instants merged per diamond width
as slices under a pixel are merged per pixel column."""

from __future__ import annotations

from typing import Any

import pytest

from kinetoscope.cli import main
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex

from ..ingest.helpers import write_session, x
from .helpers import running_server
from .test_browser import idle, open_view, shot, view_range

pytestmark = pytest.mark.slow

NARROW = "aten::lilililililililili"  # 24 characters of about 4 px: it fits in a 125 px slice
WIDE = "WWWWWWWWWWWWWWWWWWWWWWWW"  # 24 characters of about 10 px: it does not
INSTANTS = 400  # 1 µs apart
INSTANT_R = 5  # web/src/timeline/layout.ts

# Counts the calls of each draw of the timeline's canvas (a draw starts with clearRect): diamonds filled,
# labels written (text, maxWidth, their width), and every measureText by font and text over the page's life.
RECORDER = """
(() => {
  const P = CanvasRenderingContext2D.prototype;
  const mine = (ctx) => ctx.canvas.classList.contains('tl-canvas');
  const rec = window.__draw = { fills: 0, labels: [], measured: {} };
  const [clear, fill, fillText, measure] = [P.clearRect, P.fill, P.fillText, P.measureText];
  P.clearRect = function (...a) { if (mine(this)) { rec.fills = 0; rec.labels = []; } return clear.apply(this, a); };
  P.fill = function (...a) { if (mine(this)) rec.fills++; return fill.apply(this, a); };
  P.measureText = function (text) {
    const key = this.font + '|' + text;
    rec.measured[key] = (rec.measured[key] || 0) + 1;
    return measure.call(this, text);
  };
  P.fillText = function (text, x, y, max) {
    if (mine(this)) rec.labels.push({ text, max, width: measure.call(this, text).width, font: this.font });
    return fillText.apply(this, arguments);
  };
})();
"""


@pytest.fixture(scope="module")
def drawn(tmp_path_factory: pytest.TempPathFactory) -> ViewerIndex:
    """One thread: two 300 µs ops, one with a narrow name and one with a wide one, then 400 instants 1 µs apart
    (on the host's memory track), and an op long after them."""
    root = tmp_path_factory.mktemp("drawing")
    instants = [{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 4242, "tid": 1,
                 "ts": 700 + i} for i in range(INSTANTS)]
    write_session(root / "profile", [x(NARROW, 0, 300), x(WIDE, 350, 300), *instants, x("aten::last", 5000, 10)])
    assert main(["ingest", str(root / "profile"), "--out", str(root / "ds")]) == 0
    return ViewerIndex.open(Dataset(root / "ds"))


def _open(page: Any, url: str) -> float:
    """Opens the view with a 300 µs op 125 px wide; returns the pixels per µs."""
    page.add_init_script(RECORDER)
    open_view(page, url + "/")
    width = page.locator("canvas.tl-canvas").bounding_box()["width"]
    open_view(page, f"{url}/?start=0&end={round(300_000 * width / 125)}")
    page.wait_for_timeout(100)
    start, end = view_range(page)
    return float(width / (end - start) * 1000)


def test_labels_are_cut_by_their_measured_width_each_text_measured_once(page: Any, drawn: ViewerIndex) -> None:
    with running_server(drawn) as url:
        _open(page, url)
        labels = page.evaluate("window.__draw.labels")
        shot(page, "drawing-labels")
        for key in "wsad":  # four more views, the same names drawn again
            page.keyboard.press(key)
            idle(page)
            page.wait_for_timeout(50)
        measured = page.evaluate("window.__draw.measured")
    texts = {lab["text"] for lab in labels}
    # THEN the narrow name, which fits, is written whole; the wide one is cut with an ellipsis to fit
    assert NARROW in texts
    cut = [t for t in texts if t.startswith("WWW")]
    assert cut and all(t.endswith("…") for t in cut)
    assert all(lab["width"] <= lab["max"] + 0.5 for lab in labels), labels
    # AND each name was measured once for its font, whatever the number of draws
    for name in (NARROW, WIDE):
        counts = [n for key, n in measured.items() if key.endswith("|" + name)]
        assert counts == [1], (name, measured)


def test_dense_instants_draw_one_diamond_per_diamond_width(page: Any, drawn: ViewerIndex) -> None:
    with running_server(drawn) as url:
        px_per_us = _open(page, url)
        diamonds = page.evaluate("window.__draw.fills")
        shot(page, "drawing-instants")
    # 400 instants over 400 µs at 125 px per 300 µs: 167 px, one pixel column for every 2 or 3 of them;
    # one diamond every 10 px
    span_px = INSTANTS * px_per_us
    assert span_px == pytest.approx(INSTANTS * 125 / 300, rel=0.05)
    assert span_px / (2 * INSTANT_R) - 2 <= diamonds <= span_px / (2 * INSTANT_R) + 2

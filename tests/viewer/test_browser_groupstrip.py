"""A folded group's header draws a busy strip of its tracks, driven in Chromium (screenshots in
artifacts/viewer/)."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pytest

from kinetoscope.cli import main
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex

from .helpers import running_server
from .test_browser import api, idle, open_view, shot

pytestmark = pytest.mark.slow

STRIP = (37, 99, 235)


def _header_pixels(page: Any, group: str, xs: list[float], dy: int = 5) -> list[list[int]]:
    """The canvas colour `dy` px below the top of `group`'s header row at each x (CSS pixels)."""
    return page.evaluate("""([group, xs, dy]) => {
      const headers = [...document.querySelectorAll('.label.group')];
      const header = headers.find((l) => l.querySelector('.name').textContent === group);
      const canvas = document.querySelector('.tl-canvas');
      const dpr = window.devicePixelRatio || 1;
      const y = Number(header.dataset.y) - document.querySelector('.tl-scroll').scrollTop + dy;
      const ctx = canvas.getContext('2d');
      return xs.map((x) => [...ctx.getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data.slice(0, 3)]);
    }""", [group, xs, dy])


def _idle_time(server: str, tracks: list[int], after_ns: int, before_ns: int, px_ns: float) -> float:
    """A time between the two at which a pixel-wide window holds no event of `tracks` (asked of /api/window)."""
    ids = ",".join(map(str, tracks))
    at = after_ns + 2 * px_ns
    while at < before_ns - 2 * px_ns:
        w = api(server, f"/api/window?start={int(at - 2 * px_ns)}&end={int(at + 2 * px_ns)}&px=4&tracks={ids}")
        if not w["slices"]["id"] and not w["blocks"]["track"]:
            return at
        at += px_ns
    raise AssertionError("no idle time between the steps")


def test_a_folded_group_header_shows_when_its_tracks_are_busy(page: Any, server: str) -> None:
    group = "rank 1 · pid 4010"
    tracks = [t["id"] for t in api(server, "/api/meta")["tracks"] if t["rank"] == 1]
    step0, step1 = (api(server, "/api/search?q=" + quote(f"ProfilerStep#{n} rank:1"))["hits"][0] for n in (0, 1))
    span_ns = api(server, "/api/meta")["span_ns"]
    open_view(page, f"{server}/?start=0&end={span_ns}")
    width = page.locator(".tl-canvas").bounding_box()["width"]
    px_ns = span_ns / width
    idle_ns = _idle_time(server, tracks, step0["ts"] + step0["dur"], step1["ts"], px_ns)
    xs = [(step1["ts"] + step1["dur"] / 2) / px_ns, idle_ns / px_ns]
    # GIVEN the group unfolded THEN its header is plain
    assert all(tuple(p) != STRIP for p in _header_pixels(page, group, xs))
    # WHEN it is folded THEN its header draws the strip: full height while a step runs, nothing where
    # none of its tracks has an event
    page.locator(".label.group").filter(has_text=group).click()
    idle(page)
    busy, empty = _header_pixels(page, group, xs)
    assert tuple(busy) == STRIP
    assert tuple(empty) != STRIP and tuple(_header_pixels(page, group, xs[1:], dy=23)[0]) != STRIP
    assert tuple(_header_pixels(page, group, xs[:1], dy=23)[0]) == STRIP
    shot(page, "folded-group-strip")
    # AND unfolding it again takes the strip away
    page.locator(".label.group").filter(has_text=group).click()
    idle(page)
    assert all(tuple(p) != STRIP for p in _header_pixels(page, group, xs))


PUBLIC = Path("/work/shared/datasets/public-traces")
ALEXNET = PUBLIC / "hta/tests/data/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz"


def _header_row(page: Any, header: Any, dy: int) -> list[bool]:
    """Per CSS pixel of the canvas, whether the strip colour is `dy` px below the top of `header`."""
    return page.evaluate("""([y, rgb]) => {
      const canvas = document.querySelector('.tl-canvas');
      const row = canvas.getContext('2d').getImageData(0, y, canvas.width, 1).data;
      const out = [];
      const same = (i) => row[i] === rgb[0] && row[i + 1] === rgb[1] && row[i + 2] === rgb[2];
      for (let i = 0; i < row.length; i += 4) out.push(same(i));
      return out;
    }""", [int(header.get_attribute("data-y")) + dy, list(STRIP)])


@pytest.mark.skipif(not ALEXNET.exists(), reason="the public trace corpus is not on this machine")
def test_the_strip_of_a_real_trace_follows_its_events(page: Any, tmp_path: Path) -> None:
    # GIVEN HTA's AlexNet training trace, copied, imported and ingested as a user would
    trace = tmp_path / ALEXNET.name
    trace.write_bytes(ALEXNET.read_bytes())
    assert main(["import", str(trace), "--out", str(tmp_path / "prof")]) == 0
    assert main(["ingest", str(tmp_path / "prof"), "--out", str(tmp_path / "ds")]) == 0
    index = ViewerIndex.open(Dataset(tmp_path / "ds"))
    with running_server(index) as url:
        # a view around the longest device event, with the time before it and the ones after
        ts, dur = index.cursor().execute("SELECT ts, dur FROM ev JOIN view_tracks t ON t.track_id = ev.track"
                                         " WHERE t.layer = 'device' ORDER BY dur DESC LIMIT 1").fetchone()
        view = (ts - dur, ts + 2 * dur)
        open_view(page, f"{url}/?start={view[0]}&end={view[1]}&group=layer")
        assert page.evaluate("window.devicePixelRatio") == 1
        groups = page.locator(".label.group .name").all_inner_texts()
        both = 0
        for name in groups:
            full, idle_px = _check_folded(page, index, name, view)
            both += int(full > 20 and idle_px > 20)
        # AND the checks were not vacuous: some group has both kinds of pixel
        assert both >= 1


def _check_folded(page: Any, index: ViewerIndex, name: str, view: tuple[int, int]) -> tuple[int, int]:
    """Folds the group `name`; checks its strip against the events of its tracks; unfolds it again.
    Returns how many pixels were wholly busy and how many idle."""
    tracks = page.evaluate("""(name) => {
      const labels = [...document.querySelectorAll('.tl-labels .label')].sort((a, b) => a.dataset.y - b.dataset.y);
      const isHeader = (l) => l.classList.contains('group');
      const start = labels.findIndex((l) => isHeader(l) && l.querySelector('.name').textContent === name);
      const out = [];
      for (const l of labels.slice(start + 1)) {
        if (isHeader(l)) break;
        if (l.dataset.track) out.push(+l.dataset.track);
      }
      return out;
    }""", name)
    header = page.locator(".label.group").filter(has_text=name)
    # WHEN the group is folded
    header.click()
    idle(page)
    top, bottom = np.array(_header_row(page, header, 5)), np.array(_header_row(page, header, 23))
    width = len(top)
    px_ns = (view[1] - view[0]) / width
    ids = ",".join(map(str, tracks)) or "-1"
    events = index.cursor().execute(f"SELECT ts, ts + dur FROM ev WHERE dur > 0 AND track IN ({ids})").fetchall()
    full = np.zeros(width, bool)  # pixels lying wholly inside one event: busy all the pixel
    touched = np.zeros(width + 2, bool)  # pixels some event overlaps (shifted by one for the neighbours)
    for a, b in events:
        p0, p1 = int((a - view[0]) // px_ns), int((b - 1 - view[0]) // px_ns)
        if p1 < 0 or p0 >= width:
            continue
        p0, p1 = max(p0, -1), min(p1, width)
        touched[p0 + 1:p1 + 2] = True
        if p1 - 1 >= p0 + 1:
            full[p0 + 1:p1] = True
    idle_px = ~(touched[:-2] | touched[1:-1] | touched[2:])  # no event in the pixel or beside it
    shot(page, "folded-group-strip-alexnet-" + name.replace(" ", "_").replace("·", ""))
    # THEN the strip is full height wherever one event spans the pixel, and absent where no event is near
    assert top[full].all(), name
    assert not bottom[idle_px].any(), name
    header.click()
    idle(page)
    return int(full.sum()), int(idle_px.sum())

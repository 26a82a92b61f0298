"""Defects of the viewer, each checked in Chromium where a user sees it (docs/viewer.md, "Defects and their
tests", maps each defect to its test); screenshots in artifacts/viewer/."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.cli import main
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.indexing.index import ViewerIndex

from ..ingest.helpers import DATA, annotated_step, write_session, x
from . import test_browser
from .helpers import running_server
from .test_browser import api, click_event, idle, open_view, shot

pytestmark = pytest.mark.slow

UNITS_NS = {"ns": 1, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}


def _ns(text: str) -> float:
    """A duration as the viewer writes it ("45.0 µs") in ns."""
    value, unit = text.split()
    return float(value) * UNITS_NS[unit]


def _cells(page: Any, table: Any) -> list[list[str]]:
    return [row.locator("td").all_inner_texts() for row in table.locator("tbody tr").all()]


ONE_LINE_JS = "td => { const r = document.createRange(); r.selectNodeContents(td); return r.getClientRects().length; }"


# ---- Details ----------------------------------------------------------------------------------------

def test_details_lead_with_the_event_show_input_dims_on_one_line_and_link_the_parent(page: Any, server: str) -> None:
    hit = api(server, "/api/search?q=aten%3A%3Aaddmm%20rank%3A0")["hits"][1]
    parent_id = int(api(server, f"/api/event/{hit['id']}")["fields"]["parent_id"])
    parent = api(server, f"/api/event/{parent_id}")
    open_view(page, f"{server}/?start={hit['ts'] - 40_000}&end={hit['ts'] + 60_000}")
    click_event(page, hit)
    details = page.locator('[data-panel="details"]')
    fields = [row[0] for row in _cells(page, details.locator("table.kv").first)]
    # the event's name, kind and times first; the dataset's own keys (id, run, session, ...) last
    assert fields[:6] == ["name", "kind", "layer", "category", "ts_ns", "dur_ns"]
    assert fields.index("session") > fields.index("parent_id") and fields[-1] in {"stack_id", "depth", "lane"}
    # Input Dims on one line, as recorded (not one number per line)
    dims = details.locator("table.kv").nth(1).locator("tr", has_text="Input Dims").locator("td").nth(1)
    assert dims.inner_text().startswith("[[") and "\n" not in dims.inner_text()
    assert dims.evaluate(ONE_LINE_JS) == 1
    shot(page, "details-fields")
    # parent_id is a link that selects the parent
    link = details.locator("a.event-link").first
    assert link.inner_text() == str(parent_id)
    link.click()
    idle(page)
    assert page.locator(".panel .event-name").inner_text() == parent["name"]
    assert f"sel={parent_id}" in page.url


# ---- warnings -----------------------------------------------------------------------------------------

def test_a_damaged_file_marks_only_the_tracks_it_feeds(page: Any, server: str) -> None:
    """Rank 3's device_3.pb dropped events and its host_mem.pb is cut short: the streams of device 3 carry
    the mark; its CPU utilisation counters (cpu_util.pb) and allocator rows (trace.json) do not."""
    open_view(page, server + "/")
    group = page.locator('.label.group[data-group^="p:synthetic:3"]')
    assert group.locator(".badge.warn").inner_text() == "⚠ 2"
    marked = page.evaluate("""() => [...document.querySelectorAll('.tl-labels .label:not(.group)')]
        .filter((l) => l.querySelector('.badge.warn')).map((l) => l.querySelector('.name').textContent)""")
    rank3 = api(server, "/api/meta")["tracks"]
    streams = {t["name"] for t in rank3 if t["rank"] == 3 and t["layer"] == "device" and t["device"] == 3}
    assert streams and set(marked) == streams
    shot(page, "warnings-marked-tracks")


# ---- counters -----------------------------------------------------------------------------------------

def _row_ink(page: Any, counter_id: int, x0: float = 0, x1: float | None = None) -> int:
    """Pixels of the counter's row (between canvas x `x0` and `x1`, CSS px) drawn in the counter fill's blue."""
    label = page.locator(f'.label[data-counter="{counter_id}"]')
    label.scroll_into_view_if_needed()
    page.wait_for_timeout(100)  # the scroll event schedules the fetch and the redraw that idle then waits for
    idle(page)
    box, canvas = label.bounding_box(), page.locator("canvas.tl-canvas").bounding_box()
    return int(page.evaluate("""([x0, x1, y, h]) => { const c = document.querySelector('canvas.tl-canvas');
        const dpr = c.width / c.getBoundingClientRect().width;
        const d = c.getContext('2d').getImageData(Math.round(x0 * dpr), Math.round(y * dpr),
                                                  Math.round((x1 - x0) * dpr), Math.round(h * dpr)).data;
        let n = 0; for (let i = 0; i < d.length; i += 4) n += d[i + 3] > 0 && d[i + 2] > d[i] + 40; return n; }""",
                             [x0, canvas["width"] if x1 is None else x1, box["y"] - canvas["y"] + 12,
                              box["height"] - 14]))


def test_a_counter_draws_its_value_in_a_view_between_two_samples(page: Any, server: str) -> None:
    meta = api(server, "/api/meta")
    counter = next(c for c in meta["counters"] if 0 < c["min_value"] < c["max_value"] and c["samples"] >= 3)
    every = api(server, f"/api/counters?start=0&end={meta['span_ns']}&px=1000000&ids={counter['id']}")
    raw = every["series"][str(counter["id"])]
    gap, at = max((raw["ts"][i + 1] - raw["ts"][i], i) for i in range(len(raw["ts"]) - 1))
    start, end = raw["ts"][at] + gap // 4, raw["ts"][at] + 3 * gap // 4  # no sample inside the view
    assert api(server, f"/api/counters?start={start}&end={end}&px=100&ids={counter['id']}")["series"]
    open_view(page, f"{server}/?start={start}&end={end}")
    width = page.locator("canvas.tl-canvas").bounding_box()["width"]
    assert _row_ink(page, counter["id"]) > width * 5  # the value held from the sample before the view, across it
    shot(page, "counter-between-samples")


def test_fit_shows_counter_samples_after_the_last_event(page: Any, server: str) -> None:
    meta = api(server, "/api/meta")
    counter = max((c for c in meta["counters"] if 0 < c["min_value"] < c["max_value"]), key=lambda c: c["last_ts"])
    assert counter["last_ts"] > meta["span_ns"] * 1.03  # sampled on after the last event
    open_view(page, server + "/")
    page.click("button[title='Show everything']")
    idle(page)
    start, end = test_browser.view_range(page)
    assert start <= 0 and end >= counter["last_ts"]
    width = page.locator("canvas.tl-canvas").bounding_box()["width"]
    after = (meta["span_ns"] - start) / (end - start) * width + 2  # canvas x of the last event's end
    last = (counter["last_ts"] - start) / (end - start) * width
    ink = _row_ink(page, counter["id"], after, last)
    shot(page, "counter-after-last-event")
    assert last - after > 3 and ink > 0, (counter, after, last)  # drawn past the events
    shot(page, "counter-after-last-event")


# ---- the range summary --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def nested_step(tmp_path_factory: pytest.TempPathFactory) -> ViewerIndex:
    """One step: a recursive op under a Python frame, one kernel, and a device annotation over the whole step
    on the kernel's stream (as gpu_user_annotation rows are), ingested."""
    root = tmp_path_factory.mktemp("nested")
    events = annotated_step()
    write_session(root / "profile", events)
    assert main(["ingest", str(root / "profile"), "--out", str(root / "ds")]) == 0
    return ViewerIndex.open(Dataset(root / "ds"))


def _area_rows(page: Any, view: str) -> list[list[str]]:
    page.click(f'.area-views button[data-view="{view}"]')
    idle(page)
    return _cells(page, page.locator('[data-panel="selection"] .area-table table'))


def test_the_range_summary_counts_device_work_busy_time_and_self_time_once(page: Any, nested_step: ViewerIndex) -> None:
    with running_server(nested_step) as url:
        meta = api(url, "/api/meta")
        tracks = ",".join(str(t["id"]) for t in meta["tracks"])
        open_view(page, f"{url}/?area=0,{meta['span_ns']},{tracks}")  # the whole step over every track
        panel = page.locator('[data-panel="selection"]')
        # the device annotation is no kernel: "kernels only" lists the one kernel, 10 µs
        assert [(r[0], r[1], _ns(r[5])) for r in _area_rows(page, "kernels")] == [("reduce_kernel", "kernel", 10_000)]
        # the stream is busy 10 µs of the 100 µs step (10 %), not 100 %: the annotation has a track of its own
        busy = {r[0]: (r[1], r[2]) for r in _cells(page, panel.locator("table").last)}
        stream = next(v for k, v in busy.items() if k.endswith("stream 7"))
        assert _ns(stream[0]) == 10_000 and float(stream[1].rstrip("%")) == pytest.approx(10, abs=0.5)
        # Python frames are no ops, and self times add up to the thread's busy time (nothing counted twice)
        ops = _area_rows(page, "ops")
        assert ops and not any("train.py" in r[0] for r in ops)
        assert {r[0]: _ns(r[4]) for r in ops} == {"aten::sum": 55_000}
        rows = _area_rows(page, "all")
        assert {r[0]: _ns(r[4]) for r in rows if r[1] == "user_annotation"} == {"ProfilerStep#6": 40_000}
        host = sum(_ns(r[4]) for r in rows if r[1] in {"op", "user_annotation", "runtime"})
        assert host == 100_000
        shot(page, "range-summary-counted-once")


# ---- tracks of an imported trace -------------------------------------------------------------------------

MAIN = "thread 59811 (python3)"


@pytest.fixture(scope="module")
def dlrm_rank0(tmp_path_factory: pytest.TempPathFactory) -> ViewerIndex:
    """Rank 0 of the DLRM traces of tests/data, through `kinetoscope import` and `ingest` (it has two
    "Buffer Flush" events of no process)."""
    root = tmp_path_factory.mktemp("dlrm0")
    (trace,) = sorted((DATA / "dlrm_8rank").glob("worker0_*.json.gz"))
    assert main(["import", str(trace), "--out", str(root / "prof")]) == 0
    assert main(["ingest", str(root / "prof"), "--out", str(root / "ds")]) == 0
    return ViewerIndex.open(Dataset(root / "ds"))


def test_a_thread_s_runtime_row_follows_it_packed_in_its_own_lanes_in_one_process_group(
        page: Any, dlrm_rank0: ViewerIndex) -> None:
    with running_server(dlrm_rank0) as url:
        open_view(page, url + "/")
        # one group for the process: no "pid -1" group opens the page for the two Buffer Flush events
        headers = page.locator(".label.group .name").all_inner_texts()
        assert headers == ["rank 0 · pid 59811"] and not any("pid -1" in h for h in headers)
        names = [n.strip() for n in page.locator(".tl-labels .label:not(.group) .name").all_inner_texts()]
        # the device's rows first (the GPU first), then the main thread with its runtime calls right under it,
        # not after every thread
        names = names[names.index(MAIN):]
        assert names[:2] == [MAIN, f"{MAIN} · runtime"]
        # framework rows are as deep as the op tree (10); the runtime row packs its own calls: 2 lanes, not 10
        height = {n: page.locator(".tl-labels .label:not(.group)").filter(has_text=re.compile(f"^{re.escape(n)}")).first
                  .bounding_box()["height"] for n in names[:2]}
        assert height[MAIN] == 10 * test_browser.SLICE_H + 2 * test_browser.ROW_PAD
        assert height[f"{MAIN} · runtime"] == 2 * test_browser.SLICE_H + 2 * test_browser.ROW_PAD
        shot(page, "dlrm-rank0-tracks")


# ---- the Summary page -------------------------------------------------------------------------------------

STICKY_JS = """() => {
    const page = document.querySelector('.summary-page');
    const table = [...page.querySelectorAll('.analysis table.grid')].sort((a, b) => b.rows.length - a.rows.length)[0];
    page.scrollTop += table.getBoundingClientRect().top - page.getBoundingClientRect().top + 60;
    const top = page.getBoundingClientRect().top;
    const th = table.querySelector('thead th').getBoundingClientRect();
    const x = th.left + 5;
    const above = document.elementFromPoint(x, top + 1).closest('thead') !== null;
    return { rows: table.rows.length, gap: th.top - top, above }; }"""


def test_summary_tables_keep_their_header_flush_at_the_top_and_bars_have_a_legend(page: Any, server: str) -> None:
    open_view(page, server + "/?page=summary")
    page.wait_for_selector(".analysis table.grid")
    found = page.evaluate(STICKY_JS)
    assert found["rows"] > 20 and abs(found["gap"]) <= 1 and found["above"], found  # no rows show above the header
    shot(page, "summary-sticky-header")
    device = page.locator("figure.bars").filter(has_text="Device span")
    legend = device.locator(".bar-legend .legend-item").all_inner_texts()
    assert [t.split(" ")[0] for t in legend] == ["compute", "communication", "memory", "idle"]
    classes = {device.locator(".bar-legend .swatch").nth(i).get_attribute("class") for i in range(len(legend))}
    drawn = {c for b in device.locator(".bar-track .bar").all() for c in [b.get_attribute("class")] if c}
    assert {c.replace("swatch ", "") for c in classes} >= drawn - {"bar"}  # every colour drawn is in the legend


def test_summary_kernel_bars_read_differently_where_their_names_differ(page: Any, dlrm_rank0: ViewerIndex) -> None:
    with running_server(dlrm_rank0) as url:
        open_view(page, url + "/?page=summary")
        bars = page.locator("figure.bars").filter(has_text="Top device kernels")
        bars.locator(".bar-label").first.wait_for()
        labels = bars.locator(".bar-label").all_inner_texts()
        names = [bars.locator(".bar-label").nth(i).get_attribute("title") or "" for i in range(len(labels))]
        assert len({n[:40] for n in names}) < len(names)  # some names share a long prefix...
        assert len(set(labels)) == len(labels), labels  # ...yet no two bars read the same
        assert all(label.rstrip("…")[:10] == name[:10] for label, name in zip(labels, names, strict=True))
        shot(page, "summary-kernel-labels")


# ---- slices of one depth that overlap ---------------------------------------------------------------------

LONG = "aten::a_long_operator_name_that_runs_past_its_neighbour"
INK_JS = """([x0, x1, y0, y1]) => {
    const c = document.querySelector('canvas.tl-canvas');
    const dpr = c.width / c.getBoundingClientRect().width;
    const d = c.getContext('2d').getImageData(Math.round(x0 * dpr), Math.round(y0 * dpr),
                                              Math.round((x1 - x0) * dpr), Math.round((y1 - y0) * dpr)).data;
    const counts = new Map();
    for (let i = 0; i < d.length; i += 4) {
      const k = `${d[i]},${d[i + 1]},${d[i + 2]}`;
      counts.set(k, (counts.get(k) || 0) + 1);
    }
    const fill = [...counts].sort((a, b) => b[1] - a[1])[0][0].split(',').map(Number);
    let ink = 0;  // pixels far from the region's fill: text
    for (let i = 0; i < d.length; i += 4) ink += Math.max(...[0, 1, 2].map((j) => Math.abs(d[i + j] - fill[j]))) > 80;
    return ink; }"""


def test_overlapping_slices_of_one_depth_keep_their_labels_apart(page: Any, tmp_path: Path) -> None:
    # GIVEN two ops of one thread at the same depth, the second starting before the first ends
    write_session(tmp_path / "profile", [x(LONG, 0, 10), x("aten::b", 5, 10), x("aten::c", 40, 5)])
    assert main(["ingest", str(tmp_path / "profile"), "--out", str(tmp_path / "ds")]) == 0
    with running_server(ViewerIndex.open(Dataset(tmp_path / "ds"))) as url:
        open_view(page, f"{url}/?start=0&end=20000")
        canvas = page.locator("canvas.tl-canvas").bounding_box()
        track = page.locator(".label.slice").first.bounding_box()
        b_x = 5000 / 20000 * canvas["width"]
        y0 = track["y"] - canvas["y"] + test_browser.ROW_PAD + 2
        y1 = y0 + test_browser.SLICE_H - 5
        # THEN the first op's label is cut (with an ellipsis) before the second op starts, not run under it
        assert page.evaluate(INK_JS, [4, b_x - 8, y0, y1]) > 30  # its label is drawn...
        assert page.evaluate(INK_JS, [b_x - 3, b_x - 0.5, y0, y1]) == 0  # ...and ends short of the next slice
        assert page.evaluate(INK_JS, [b_x + 3, b_x + 40, y0, y1]) > 10  # whose own label reads from its start
        shot(page, "overlapping-labels")


# ---- the Memory page ----------------------------------------------------------------------------------

def test_memory_peaks_are_labelled_once_per_series_without_overlapping(page: Any, server: str) -> None:
    series = api(server, "/api/memory/series")["series"]
    open_view(page, server + "/?page=memory")
    page.click('[data-subtab="memory"]')
    idle(page)
    boxes = [link.bounding_box() for link in page.locator("a.peak-link").all()]
    assert len(boxes) == len(series) == page.locator("canvas.mem-chart").count() > 1  # a peak per series, a chart each

    def apart(a: dict[str, float], b: dict[str, float]) -> bool:
        return (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])

    assert all(apart(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:])
    shot(page, "memory-peaks")


def test_details_of_a_real_op_read_the_same_way(page: Any, dlrm_rank0: ViewerIndex) -> None:
    with running_server(dlrm_rank0) as url:
        hit = next(h for h in api(url, "/api/search?q=aten%3A%3Aaddmm&limit=50")["hits"]
                   if int(api(url, f"/api/event/{h['id']}")["fields"]["parent_id"]) >= 0)
        event = api(url, f"/api/event/{hit['id']}")
        assert isinstance(event["args"].get("Input Dims"), list)
        open_view(page, f"{url}/?sel={hit['id']}")
        details = page.locator('[data-panel="details"]')
        fields = [row[0] for row in _cells(page, details.locator("table.kv").first)]
        assert fields[:4] == ["name", "kind", "layer", "category"] and fields.index("id") > fields.index("launch_id")
        dims = details.locator("table.kv").nth(1).locator("tr", has_text="Input Dims").locator("td").nth(1)
        assert dims.evaluate(ONE_LINE_JS) == 1 and dims.inner_text().replace(" ", "") == str(
            event["args"]["Input Dims"]).replace(" ", "").replace("'", '"')
        parent = int(event["fields"]["parent_id"])
        details.locator("a.event-link").first.click()
        idle(page)
        assert f"sel={parent}" in page.url
        assert page.locator(".panel .event-name").inner_text() == api(url, f"/api/event/{parent}")["name"]
        shot(page, "details-real-op")


def test_a_launch_latency_label_stays_in_the_launched_kernels_row(page: Any, server: str) -> None:
    # GIVEN a kernel of rank 0 whose launch (on the runtime row) is drawn below the streams and the
    # thread rows between them (device streams come first)
    hit = api(server, "/api/search?q=cat%3Akernel%20sm90%20rank%3A0")["hits"][2]
    open_view(page, f"{server}/?start={hit['ts'] - 60_000}&end={hit['ts'] + 60_000}")
    # WHEN it is selected, which draws the arrow from its launch and the launch latency
    click_event(page, hit)
    page.wait_for_function("document.querySelector('.timeline').dataset.latencyLabels")
    boxes = page.locator(".timeline").get_attribute("data-latency-labels").split()
    # THEN the label lies inside the kernel's own row, not half-way along the arrow over other tracks
    canvas = page.locator("canvas.tl-canvas").bounding_box()
    row = page.locator(f'.label[data-track="{hit["track"]}"]').bounding_box()
    _x, y, _w, h = (int(v) for v in boxes[0].split(","))
    top, bottom = canvas["y"] + y, canvas["y"] + y + h
    assert row["y"] - 1 <= top and bottom <= row["y"] + row["height"] + 1, (top, bottom, row)
    shot(page, "latency-label-in-the-kernels-row")

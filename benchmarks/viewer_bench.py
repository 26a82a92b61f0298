"""Viewer speed on a generated 10-million-event dataset: window queries and first paint.

    PYTHONPATH=src python benchmarks/viewer_bench.py [--events 10000000] [--data /tmp/kinetoscope-bench-10m]

Targets: window query p95 <= 100 ms; first paint <= 2 s after the page is opened on an
already-ingested dataset. The baseline for window queries is what a viewer without level of
detail would do: fetch every event overlapping the window from the Parquet dataset.
The dataset (Kineto JSON traces from tests/kineto_gen.py, through the real ingest) is generated
into /tmp once and reused.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.index import ViewerIndex
from kinetoscope.viewer.window import WindowRequest, query_window
from tests.kineto_gen import TrainingSpec, write_dataset

WINDOW_TARGET_MS = 100.0
PAINT_TARGET_S = 2.0
SCREEN_PX = 1800


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


def windows(index: ViewerIndex, count: int, seed: int) -> list[tuple[int, int]]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        frac = [1.0, 0.3, 0.05, 0.01, 1e-3, 1e-4][i % 6]
        width = max(int(index.span_ns * frac), 1000)
        start = rng.randint(0, max(index.span_ns - width, 0))
        out.append((start, start + width))
    return out


def screen_tracks(index: ViewerIndex, rng: random.Random) -> tuple[int, ...]:
    """The tracks of one screen: the tracks of two ranks."""
    rows = index.cursor().execute("SELECT track_id, rank FROM view_tracks ORDER BY track_id").fetchall()
    ranks = sorted({r for _, r in rows})
    pick = set(rng.sample(ranks, min(2, len(ranks))))
    return tuple(t for t, r in rows if r in pick)


def bench_ours(index: ViewerIndex, spans: list[tuple[int, int]]) -> list[float]:
    rng = random.Random(1)
    times = []
    for start, end in spans:
        req = WindowRequest(start_ns=start, end_ns=end, width_px=SCREEN_PX, tracks=screen_tracks(index, rng))
        began = time.perf_counter()
        query_window(index, req)
        times.append((time.perf_counter() - began) * 1000)
    return times


def bench_baseline(index: ViewerIndex, spans: list[tuple[int, int]]) -> list[float]:
    con = index.cursor()
    times = []
    for start, end in spans:
        began = time.perf_counter()
        con.execute("SELECT id, ts_ns, dur_ns, name, track_id, lane FROM events "
                    "WHERE ts_ns < ? AND ts_ns + dur_ns > ?", [end + index.t0_ns, start + index.t0_ns]).fetchnumpy()
        times.append((time.perf_counter() - began) * 1000)
    return times


def first_paint(index: ViewerIndex, repeats: int) -> list[float]:
    from playwright.sync_api import sync_playwright

    from tests.viewer.helpers import CHROMIUM, CHROMIUM_ARGS, running_server

    times = []
    with running_server(index) as url, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        for _ in range(repeats):
            page = browser.new_page(viewport={"width": 1920, "height": 1080})
            began = time.perf_counter()
            page.goto(url + "/")
            page.wait_for_selector("html[data-idle=true]", state="attached", timeout=60_000)
            times.append(time.perf_counter() - began)
            page.close()
        browser.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--data", type=Path, default=Path("/tmp/kinetoscope-bench-10m"))
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args()
    if not (args.data / "_dataset.json").is_file():
        began = time.perf_counter()
        write_dataset(args.data, TrainingSpec.for_events(args.events, ranks=8, steps=60))
        print(f"generated and ingested in {time.perf_counter() - began:.1f} s into {args.data}")
    began = time.perf_counter()
    index = ViewerIndex.open(Dataset(args.data))
    print(f"index ready in {time.perf_counter() - began:.2f} s ({index.event_count:,} events; built once per dataset)")
    spans = windows(index, args.queries, seed=7)
    ours = bench_ours(index, spans)
    base = bench_baseline(index, spans[: max(6, args.queries // 10)])
    ours_p95, base_p95 = p95(ours), p95(base)
    print(f"window query p95: {ours_p95:.1f} ms (median {statistics.median(ours):.1f} ms) "
          f"-> {ours_p95 / WINDOW_TARGET_MS:.2f} of the 100 ms target")
    print(f"baseline (every overlapping event from Parquet) p95: {base_p95:.1f} ms "
          f"-> ours is {base_p95 / ours_p95:.1f}x faster")
    paints = first_paint(index, repeats=3)
    paint = statistics.median(paints)
    print(f"first paint (page open -> timeline drawn, median of {len(paints)}): {paint:.2f} s "
          f"-> {paint / PAINT_TARGET_S:.2f} of the 2 s target")
    return 0 if ours_p95 <= WINDOW_TARGET_MS and paint <= PAINT_TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())

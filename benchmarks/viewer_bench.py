"""Viewer speed on a generated 10-million-event dataset: window queries, index build and first paint.

    PYTHONPATH=src python benchmarks/viewer_bench.py [--events 10000000] [--data /tmp/kinetoscope-bench-10m]
    PYTHONPATH=src python benchmarks/viewer_bench.py --baseline /tmp/baseline [--repeats 3]

Targets: window query p95 <= 100 ms; first paint <= 1 s after the page is opened on an
already-ingested dataset. The baseline for window queries is what a viewer without level of
detail would do: fetch every event overlapping the window from the Parquet dataset.

With ``--baseline SRC`` (a ``git worktree`` of an earlier commit), this checkout's ``src`` and
the baseline's run side by side, alternating, each step in a process of its own: the index build
(its time and the process's peak memory), the passes over each Parquet part while building the
index and serving the first page, opening an index already built, and first paint. It prints the
medians and the ratios (ours / baseline).

The dataset (Kineto JSON traces from tests/kineto_gen.py, through the real ingest) is generated
into /tmp once and reused.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kinetoscope.viewer.indexing.index import ViewerIndex  # noqa: E402
from kinetoscope.viewer.querying.window import WindowRequest, query_window  # noqa: E402
from tests.kineto_gen import TrainingSpec, write_dataset  # noqa: E402

WINDOW_TARGET_MS = 100.0
PAINT_TARGET_S = 1.0
SCREEN_PX = 1800
STEPS = ("build", "passes", "open", "paint")


def open_dataset(path: Path) -> Any:
    """The dataset as this checkout's ViewerIndex takes it (before the one Dataset class, the viewer's own)."""
    try:
        from kinetoscope.viewer.dataset import Dataset as ViewerDataset  # type: ignore[import-not-found]
    except ImportError:
        from kinetoscope.query.dataset import Dataset

        return Dataset(path)
    return ViewerDataset.open(path)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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


def bench_ours(index: ViewerIndex, spans: list[tuple[int, int]]) -> tuple[list[float], list[float]]:
    """Each window query's wall time and CPU time (ms; the CPU of every thread of this process,
    which a loaded machine inflates far less than the wall time)."""
    rng = random.Random(1)
    times, cpu = [], []
    for start, end in spans:
        req = WindowRequest(start_ns=start, end_ns=end, width_px=SCREEN_PX, tracks=screen_tracks(index, rng))
        began, began_cpu = time.perf_counter(), time.process_time()
        query_window(index, req)
        times.append((time.perf_counter() - began) * 1000)
        cpu.append((time.process_time() - began_cpu) * 1000)
    return times, cpu


def bench_baseline(index: ViewerIndex, spans: list[tuple[int, int]]) -> list[float]:
    con = index.cursor()
    times = []
    for start, end in spans:
        began = time.perf_counter()
        con.execute("SELECT id, ts_ns, dur_ns, name, track_id, lane FROM events "
                    "WHERE ts_ns < ? AND ts_ns + dur_ns > ?", [end + index.t0_ns, start + index.t0_ns]).fetchnumpy()
        times.append((time.perf_counter() - began) * 1000)
    return times


def keep_clocks(index: ViewerIndex) -> None:
    """What `kinetoscope view` does once the index is built: the run's clocks are worked out and kept
    beside it, so the first page does not wait for them."""
    try:
        from kinetoscope.viewer.indexing import clock_cache
    except ImportError:  # a baseline from before the clocks were kept: its first page waits for them
        return
    clock_cache.clocks(index)


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


def step(name: str, data: Path) -> dict[str, float]:
    """One measurement of this process's checkout (run as a child by `side_by_side`)."""
    began = time.perf_counter()
    if name == "build":
        keep_clocks(ViewerIndex.open(open_dataset(data), rebuild=True))
        return {"build_s": time.perf_counter() - began, "peak_rss_mib": peak_rss_mib()}
    if name == "open":
        ViewerIndex.open(open_dataset(data))
        return {"open_s": time.perf_counter() - began, "peak_rss_mib": peak_rss_mib()}
    if name == "paint":
        index = ViewerIndex.open(open_dataset(data))
        return {"paint_s": statistics.median(first_paint(index, repeats=3)), "peak_rss_mib": peak_rss_mib()}
    return {"passes": float(max_passes(data))}


def max_passes(data: Path) -> int:
    """The most passes over any one Parquet part while a copy of `data` is indexed and its first page served."""
    from tests.viewer.parts_read import counting_parts
    from tests.viewer.test_parts_read import _first_page

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(shutil.copytree(data, Path(tmp) / "ds", ignore=shutil.ignore_patterns("_viewer")))
        patch = __import__("pytest").MonkeyPatch()
        with counting_parts(patch, copy, Path(tmp) / "logs") as reads:
            index = ViewerIndex.open(open_dataset(copy))
            _first_page(index)
            index._con.close()
        return max(reads.passes().values())


def run_step(src: Path, name: str, data: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    done = subprocess.run([sys.executable, __file__, "--step", name, "--data", str(data)], env=env,
                          capture_output=True, text=True, check=True)
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def side_by_side(baseline: Path, data: Path, repeats: int) -> None:
    sides = {"ours": REPO / "src", "baseline": baseline / "src"}
    found: dict[str, dict[str, list[float]]] = {side: {} for side in sides}
    for name in STEPS:
        for _ in range(1 if name == "passes" else repeats):
            for side, src in sides.items():  # alternating, so a change in the machine's load hits both
                for key, value in run_step(src, name, data).items():
                    found[side].setdefault(f"{name}.{key}", []).append(value)
    print(f"{'':28} {'ours':>10} {'baseline':>10} {'ratio':>7}   (median of {repeats}; peak memory: the max)")
    for key in found["ours"]:
        pick = max if key.endswith("rss_mib") else statistics.median
        ours, base = pick(found["ours"][key]), pick(found["baseline"][key])
        print(f"{key:28} {ours:10.2f} {base:10.2f} {ours / base if base else float('inf'):7.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--data", type=Path, default=Path("/tmp/kinetoscope-bench-10m"))
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--baseline", type=Path, help="a checkout to compare with, side by side")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--step", choices=STEPS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        print(json.dumps(step(args.step, args.data)))
        return 0
    if not (args.data / "_dataset.json").is_file():
        began = time.perf_counter()
        write_dataset(args.data, TrainingSpec.for_events(args.events, ranks=8, steps=60))
        print(f"generated and ingested in {time.perf_counter() - began:.1f} s into {args.data}")
    if args.baseline:
        side_by_side(args.baseline, args.data, args.repeats)
        return 0
    began = time.perf_counter()
    index = ViewerIndex.open(open_dataset(args.data))
    keep_clocks(index)
    print(f"index ready in {time.perf_counter() - began:.2f} s ({index.event_count:,} events; built once per dataset)")
    spans = windows(index, args.queries, seed=7)
    ours, ours_cpu = bench_ours(index, spans)
    base = bench_baseline(index, spans[: max(6, args.queries // 10)])
    ours_p95, base_p95 = p95(ours), p95(base)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"window query p95: {ours_p95:.1f} ms (median {statistics.median(ours):.1f} ms) "
          f"-> {ours_p95 / WINDOW_TARGET_MS:.2f} of the 100 ms target; CPU time p95 {p95(ours_cpu):.1f} ms "
          f"(median {statistics.median(ours_cpu):.1f} ms)")
    print(f"baseline (every overlapping event from Parquet) p95: {base_p95:.1f} ms "
          f"-> ours is {base_p95 / ours_p95:.1f}x faster")
    paints = first_paint(index, repeats=3)
    paint = statistics.median(paints)
    print(f"first paint (page open -> timeline drawn, median of {len(paints)}): {paint:.2f} s "
          f"-> {paint / PAINT_TARGET_S:.2f} of the 1 s target; peak memory {peak_rss_mib():.0f} MiB")
    return 0 if ours_p95 <= WINDOW_TARGET_MS and paint <= PAINT_TARGET_S else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""The viewer's zoom pyramid against aggregating every window on the fly, side by side.

The viewer's index pre-aggregates long spans into blocks (the pyramid, ``viewer/indexing/index.py``
``plan_levels``) when a dataset holds more than ``RAW_BUDGET_EVENTS`` events; a window expected to
hold fewer events is aggregated on the fly from the events themselves. This builds the index of
one generated dataset both ways (the pyramid, then none: ``RAW_BUDGET_EVENTS`` raised past the
dataset's events) and runs the same window queries on each (whole run to 1e-4 of it, two ranks'
tracks a screen). Reported: the build's CPU seconds, and the window queries' CPU ms (median and
p95; ``time.process_time``, every thread of this process, which the load of other processes
inflates far less than wall time) with their ratio.

Usage: PYTHONPATH=src python benchmarks/viewer_pyramid.py [--events 1000000] [--queries 36]
       [--data /tmp/kinetoscope-bench-pyramid]
The dataset is generated (tests/kineto_gen.py, through the real ingest) into ``--data`` once and reused.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from viewer_bench import SCREEN_PX, p95, screen_tracks, windows  # noqa: E402

from kinetoscope.query.dataset import Dataset  # noqa: E402
from kinetoscope.viewer.indexing import index as index_module  # noqa: E402
from kinetoscope.viewer.indexing.index import ViewerIndex  # noqa: E402
from kinetoscope.viewer.querying.window import WindowRequest, query_window  # noqa: E402
from tests.kineto_gen import TrainingSpec, write_dataset  # noqa: E402

DEFAULT_BUDGET = index_module.RAW_BUDGET_EVENTS


def build(data: Path, budget: int) -> tuple[ViewerIndex, float]:
    """The index of ``data`` built with ``budget`` as the raw budget, and the build's CPU seconds."""
    index_module.RAW_BUDGET_EVENTS = budget
    try:
        began = time.process_time()
        index = ViewerIndex.open(Dataset(data), rebuild=True)
        return index, time.process_time() - began
    finally:
        index_module.RAW_BUDGET_EVENTS = DEFAULT_BUDGET


def query_cpu_ms(index: ViewerIndex, spans: list[tuple[int, int]]) -> list[float]:
    rng = random.Random(1)
    cpu = []
    for start, end in spans:
        req = WindowRequest(start_ns=start, end_ns=end, width_px=SCREEN_PX, tracks=screen_tracks(index, rng))
        began = time.process_time()
        query_window(index, req)
        cpu.append((time.process_time() - began) * 1000)
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=36)
    parser.add_argument("--data", type=Path, default=Path("/tmp/kinetoscope-bench-pyramid"))
    args = parser.parse_args()
    if not (args.data / "_dataset.json").is_file():
        write_dataset(args.data, TrainingSpec.for_events(args.events, ranks=8, steps=60))
    sides = {}
    for name, budget in (("pyramid", DEFAULT_BUDGET), ("on the fly", 1 << 62)):
        index, build_s = build(args.data, budget)
        spans = windows(index, args.queries, seed=7)
        query_cpu_ms(index, spans[:6])  # warm: DuckDB's caches
        cpu = query_cpu_ms(index, spans)
        whole = [ms for i, ms in enumerate(cpu) if i % 6 == 0]  # the whole-run windows
        sides[name] = (statistics.median(cpu), p95(cpu), statistics.median(whole))
        levels = len(index.levels.pyramid_ns)
        print(f"{name}: {index.event_count:,} events, {levels} pyramid levels; build {build_s:.2f} CPU s; "
              f"window CPU median {sides[name][0]:.1f} ms, p95 {sides[name][1]:.1f} ms, "
              f"whole run {sides[name][2]:.1f} ms")
    (m0, p0, w0), (m1, p1, w1) = sides["pyramid"], sides["on the fly"]
    print(f"on the fly / pyramid: median {m1 / m0:.2f}, p95 {p1 / p0:.2f}, whole run {w1 / w0:.2f}")


if __name__ == "__main__":
    main()

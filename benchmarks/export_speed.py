"""Export speed: end of the profiled region to a finished session, against torch's export_chrome_trace alone.

A profile of about 100,000 events is recorded fresh for every repeat; the baseline's
on_trace_ready writes the Chrome trace with torch's exporter, ours is Profiler.export_trace
(all four modes). Both times include the profiler's own stop. Goal: ours / baseline <= 1.5.

    python benchmarks/export_speed.py [--repeats 5] [--ops 10000]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch.profiler import profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ratio_line

import kinetoscope
from kinetoscope import ProfileConfig, ProfileMode, Profiler

ALL_MODES = [ProfileMode.DEVICE, ProfileMode.RUNTIME, ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY]


def workload(ops: int) -> None:
    x = torch.ones(4)
    for _ in range(ops):
        x.add(1).mul(2)


def timed_stop(ops: int, on_ready: Callable[[Any], object], config: ProfileConfig | None) -> float:
    kwargs: dict[str, Any] = {"experimental_config": config} if config is not None else {}
    ctx = profile(activities=kinetoscope.activities(), on_trace_ready=on_ready, record_shapes=True, **kwargs)
    with ctx:
        workload(ops)
        start = time.perf_counter()
    return time.perf_counter() - start


def count_events(path: Path) -> int:
    return len(json.loads(path.read_text())["traceEvents"])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ops", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        exporter = Profiler(ProfileConfig(modes=ALL_MODES, profile_output_dir=out / "sessions"))
        baseline_path = out / "baseline.json"
        base, ours = [], []
        for _ in range(args.repeats):
            base.append(timed_stop(args.ops, lambda p: p.export_chrome_trace(str(baseline_path)), None))
            ours.append(timed_stop(args.ops, exporter.export_trace, exporter.config))
        events = count_events(baseline_path)
    print(f"profile of {events:,} events, {args.repeats} repeats each")
    print(ratio_line("export (stop + write)", statistics.median(ours), statistics.median(base), 1.5))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

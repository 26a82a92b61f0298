"""What ``precache`` saves the profiled window: compiled-kernel metadata gathered in warm-up.

Compiles a small model once (torch.compile, Inductor's C++ backend on CPU), then, in the
same process, profiles one step repeatedly with ``artifact_cache_dir`` set:

- ``precache=False``: the catalog of graphs, kernels and file hashes is gathered when the
  profiler starts, so the profiled window pays for it;
- ``precache=True``: it was gathered at the end of the compilation (during warm-up); the
  window pays nothing. The warm-up cost is reported separately;
- ``no artifact_cache_dir``: the same step with compiled-kernel capture off, the baseline.

Prints the median time from entering ``profile(...)`` to the end of the first profiled step,
and the ratios. The catalog's cost grows with the number of live Python objects (it looks
up each graph's FX key), so ``--ballast N`` adds N small objects to mimic a larger program.

    PYTHONPATH=src python benchmarks/kernel_precache.py [--repeats 7] [--ballast 1000000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch
from torch.profiler import profile

import kinetoscope
from kinetoscope import ProfileConfig, ProfileMode, Profiler
from kinetoscope.capture.compiled.kernel_catalog import CATALOG


def window_s(model: torch.nn.Module, x: torch.Tensor, out: Path, cache: Path | None, precache: bool) -> float:
    """Seconds from entering the profiler to the end of the first profiled step."""
    config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=out, artifact_cache_dir=cache,
                           precache=precache)
    exporter = Profiler(config)
    start = time.perf_counter()
    with profile(activities=kinetoscope.activities(), experimental_config=config,
                 on_trace_ready=exporter.export_trace), torch.no_grad():
        model(x)
        elapsed = time.perf_counter() - start
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--ballast", type=int, default=0, help="extra live objects, to mimic a larger program")
    args = parser.parse_args()
    ballast = [[i] for i in range(args.ballast)]
    root = Path(tempfile.mkdtemp(prefix="kinetoscope-precache-"))
    cache, out = root / "cache", root / "out"
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(cache))
    model = torch.compile(torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8)))
    x = torch.randn(16, 64)
    with torch.no_grad():
        model(x)  # the one compilation
    rows: dict[str, list[float]] = {"no artifact_cache_dir": [], "precache=False": [], "precache=True": []}
    warmup: list[float] = []
    for _ in range(args.repeats):
        rows["no artifact_cache_dir"].append(window_s(model, x, out, None, True))
        CATALOG.reset()
        rows["precache=False"].append(window_s(model, x, out, cache, False))
        CATALOG.reset()
        start = time.perf_counter()
        CATALOG.refresh()  # what the end-of-compilation callback does during warm-up
        warmup.append(time.perf_counter() - start)
        rows["precache=True"].append(window_s(model, x, out, cache, True))
    base = statistics.median(rows["no artifact_cache_dir"])
    print(f"profiled window: enter profile() to end of first step, median of {args.repeats} "
          f"({len(ballast)} ballast objects)")
    for label, times in rows.items():
        median = statistics.median(times)
        print(f"  {label:22} {median * 1e3:8.2f} ms  {median / base:6.2f}x baseline")
    lazy, eager = statistics.median(rows["precache=False"]), statistics.median(rows["precache=True"])
    print(f"  precache=False / precache=True: {lazy / eager:.2f}x")
    print(f"  metadata gathering moved to warm-up by precache: {statistics.median(warmup) * 1e3:.2f} ms per refresh")


if __name__ == "__main__":
    main()

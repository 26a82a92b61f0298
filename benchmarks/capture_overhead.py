"""Capture overhead: unprofiled vs plain torch.profiler vs torch.profiler + kinetoscope (all four modes).

Workloads: 10,000 tiny ops, and a small MLP training step. Variants run interleaved in one
process, several repeats each, and the medians are compared. Goal: (c)/(b) <= 1.02 for the
profiled step, and the sampler uses <= 1 % of one core at the default interval.

    python benchmarks/capture_overhead.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import gc
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import torch
from torch.profiler import profile

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ratio_line

import kinetoscope
from kinetoscope import ProfileConfig, ProfileMode, Profiler

ALL_MODES = [ProfileMode.DEVICE, ProfileMode.RUNTIME, ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY]
FLAGS = {"record_shapes": True, "with_stack": False}


def tiny_ops() -> Callable[[], None]:
    x = torch.ones(8)

    def run() -> None:
        for _ in range(10_000):
            torch.add(x, 1)

    return run


def mlp_step() -> Callable[[], None]:
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, 256), torch.randint(0, 10, (64,))

    def run() -> None:
        for _ in range(20):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()

    return run


def timed_unprofiled(work: Callable[[], None]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def timed_torch(work: Callable[[], None]) -> float:
    with profile(activities=kinetoscope.activities(), **FLAGS):
        start = time.perf_counter()
        work()
        elapsed = time.perf_counter() - start
    return elapsed


def timed_kinetoscope(work: Callable[[], None], exporter: Profiler) -> float:
    with profile(
        activities=kinetoscope.activities(),
        experimental_config=exporter.config,
        on_trace_ready=exporter.export_trace,
        **FLAGS,
    ):
        start = time.perf_counter()
        work()
        elapsed = time.perf_counter() - start
    return elapsed


def compare(name: str, work: Callable[[], None], exporter: Profiler, repeats: int) -> float:
    work()  # warm-up
    runs: dict[str, list[float]] = {"a": [], "b": [], "c": []}
    variants = {
        "a": lambda: timed_unprofiled(work),
        "b": lambda: timed_torch(work),
        "c": lambda: timed_kinetoscope(work, exporter),
    }
    order = list(variants)
    for _ in range(repeats):
        random.shuffle(order)  # no variant always runs right after another's export
        for key in order:
            gc.collect()  # garbage left by the previous run's export is not charged to the next
            runs[key].append(variants[key]())
    a, b, c = (statistics.median(runs[k]) for k in "abc")
    print(
        f"{name}: (a) unprofiled {a * 1e3:.1f} ms, (b) torch.profiler {b * 1e3:.1f} ms, "
        f"(c) + kinetoscope {c * 1e3:.1f} ms"
    )
    print("  " + ratio_line(f"{name} (c)/(b)", c, b, 1.02))
    return c / b


def sampler_cpu_share(exporter: Profiler, seconds: float) -> float:
    """CPU time the sampler process uses while profiling an idle-ish job, as a share of one core."""
    assert exporter.sampler_pid is not None
    helper = psutil.Process(exporter.sampler_pid)
    with profile(
        activities=kinetoscope.activities(), experimental_config=exporter.config, on_trace_ready=exporter.export_trace
    ):
        before = helper.cpu_times()
        start = time.perf_counter()
        time.sleep(seconds)
        after = helper.cpu_times()
        wall = time.perf_counter() - start
    used = (after.user + after.system) - (before.user + before.system)
    return used / wall


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(1)  # one intra-op thread: less sensitive to other load on the machine
    with tempfile.TemporaryDirectory() as out:
        exporter = Profiler(ProfileConfig(modes=ALL_MODES, profile_output_dir=out))
        ratios = [
            compare("10,000 tiny ops", tiny_ops(), exporter, args.repeats),
            compare("MLP training (20 steps)", mlp_step(), exporter, args.repeats),
        ]
        share = sampler_cpu_share(exporter, 10.0)  # psutil counts CPU in 10 ms ticks: a long window
    print(
        f"sampler process CPU: {share * 100:.2f} % of one core at "
        f"{exporter.config.sample_interval_ms} ms (goal <= 1 %) {'OK' if share <= 0.01 else 'OVER GOAL'}"
    )
    print(f"worst (c)/(b): {max(ratios):.3f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

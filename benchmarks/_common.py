"""Helpers shared by the benchmarks: repeated timing, medians, ratio lines and process-tree memory."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import psutil


def median_s(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def ratio_line(label: str, ours: float, baseline: float, goal: float) -> str:
    ratio = ours / baseline if baseline > 0 else float("inf")
    verdict = "OK" if ratio <= goal else "OVER GOAL"
    times = f"ours {ours * 1e3:.2f} ms / baseline {baseline * 1e3:.2f} ms"
    return f"{label}: {times} = {ratio:.3f}x (goal <= {goal}x) {verdict}"


def tree_rss(process: psutil.Process) -> int:
    """Resident memory of ``process`` and all its children, in bytes (0 once it is gone)."""
    total = 0
    try:
        for proc in [process, *process.children(recursive=True)]:
            try:
                total += proc.memory_info().rss
            except psutil.Error:
                continue
    except psutil.Error:
        return 0
    return total

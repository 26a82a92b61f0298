"""Helpers shared by the benchmarks: repeated timing, medians, ratio lines and process-tree memory."""

from __future__ import annotations

import os
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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


@dataclass
class Measured:
    """One process run to its end: wall and CPU seconds (user + sys of it and the children it
    waited for, from ``wait4``), the peak RSS of its process tree, its exit code and stderr."""

    wall_s: float
    cpu_s: float
    peak_bytes: int
    returncode: int
    stderr: str


def measured_process(argv: list[str], env: dict[str, str] | None = None) -> Measured:
    """Run ``argv`` to its end, sampling its process tree's memory every 10 ms."""
    started = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env or dict(os.environ))
    process, peak = psutil.Process(child.pid), 0
    while True:
        pid, status, usage = os.wait4(child.pid, os.WNOHANG)
        if pid:
            break
        peak = max(peak, tree_rss(process))
        time.sleep(0.01)
    wall = time.perf_counter() - started
    errors = child.stderr.read().decode(errors="replace") if child.stderr else ""
    return Measured(wall, usage.ru_utime + usage.ru_stime, peak, os.waitstatus_to_exitcode(status), errors)


def load_average() -> str:
    """The 1, 5 and 15 minute load averages, as uptime prints them."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def byte_compiled(python: str, *trees: Path) -> None:
    """Compile the modules of ``trees`` to ``__pycache__`` with ``python``, as installing a package does.

    A tool run from its source tree with ``PYTHONDONTWRITEBYTECODE`` set (as on the development
    machine) otherwise compiles every module it imports in every process (about 0.2 s for
    kinetoscope's), which an installed tool never does; each benchmark compiles each tool's
    sources once first, so that every tool is timed as installed."""
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    for tree in trees:
        subprocess.run([python, "-m", "compileall", "-q", str(tree)], env=env, check=True, stdout=subprocess.DEVNULL)


def package_tree(python: str, package: str) -> Path | None:
    """The source folder of ``package`` as ``python`` imports it (None: not importable)."""
    code = f"import os, {package}; print(os.path.dirname({package}.__file__))"
    done = subprocess.run([python, "-c", code], check=False, capture_output=True, text=True)
    return Path(done.stdout.strip()) if done.returncode == 0 else None

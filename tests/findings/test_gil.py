"""gil_contention on real CPU captures: three threads running a Python loop at once, and the same
threads with two of them sleeping instead (a C call that releases the GIL)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kinetoscope.findings import RULES, run_rules

from .test_captured_rules import STEPS, capture, python_bookkeeping

pytestmark = [pytest.mark.filterwarnings("ignore:Profiler won.t be using warmup"), pytest.mark.serial]
LOOP = 100_000


def with_helpers(tmp_path: Path, helper_work: Callable[[], object]) -> dict:
    """Two helper threads, started before profiling (Python tracing covers the threads alive when it
    starts), each running ``helper_work`` in every step beside the main thread's Python loop."""
    start, done = threading.Barrier(3), threading.Barrier(3)

    def helper() -> None:
        for _ in range(STEPS):
            start.wait()
            helper_work()
            done.wait()

    helpers = [threading.Thread(target=helper) for _ in range(2)]
    for thread in helpers:
        thread.start()

    def step() -> None:
        start.wait()
        python_bookkeeping(LOOP)
        done.wait()

    try:
        return capture(tmp_path, step, with_stack=True)
    finally:
        for thread in helpers:
            thread.join(timeout=60)


def test_three_threads_in_python_at_once_wait_for_the_gil(tmp_path: Path) -> None:
    tables = with_helpers(tmp_path, lambda: python_bookkeeping(LOOP))
    (found,) = run_rules(tables, rules=[RULES["gil_contention"]])
    # THEN three threads, their Python time beyond the span counted as waiting, the loop named
    assert found.seen["threads"] == 3 and len(found.seen["python_own_ns_by_thread"]) == 3
    assert found.seen["gil_wait_ns"] == found.seen["python_own_ns"] - found.seen["span_ns"] > 0
    # the gain is the waiting, but never more than the window (thread time can add up past it)
    capped = "at most the rank's window" in found.gain_basis
    assert 0 < found.gain_ns <= found.seen["gil_wait_ns"] and (capped or found.gain_ns == found.seen["gil_wait_ns"])
    assert found.seen["top_frames"][0]["name"].endswith("python_bookkeeping")
    assert found.seen["top_frames"][0]["count"] == 3 * STEPS


def test_threads_that_sleep_do_not_contend(tmp_path: Path) -> None:
    tables = with_helpers(tmp_path, lambda: time.sleep(0.02))
    assert run_rules(tables, rules=[RULES["gil_contention"]]) == []

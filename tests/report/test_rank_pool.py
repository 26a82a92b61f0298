"""The summary's worker pool: a failing block ends it at once."""

from __future__ import annotations

import time

import pytest

from kinetoscope.report import rank_pool


def test_a_failing_block_cancels_the_ranks_not_started_and_ends_the_workers() -> None:
    futures = []
    started = time.monotonic()
    with pytest.raises(RuntimeError), rank_pool.pool(1, 1) as executor:
        futures = [executor.submit(time.sleep, 5) for _ in range(6)]
        time.sleep(0.5)  # the worker has started the first
        raise RuntimeError("a rank failed")  # as a rank's error reaches the summary
    deadline = time.monotonic() + 30
    while not all(future.done() for future in futures) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert all(future.done() for future in futures)
    assert time.monotonic() - started < 5  # no rank ran to its end
    assert sum(future.cancelled() for future in futures) >= 4  # those never handed to the worker

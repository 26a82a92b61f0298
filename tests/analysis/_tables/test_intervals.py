"""Interval arithmetic (``analysis/_tables/intervals.py``): the covered length, read a chunk at a time."""

from __future__ import annotations

import numpy as np
import pytest

from kinetoscope.analysis._tables import chunks, intervals


def _union_ns(starts: np.ndarray, ends: np.ndarray) -> int:
    merged_starts, merged_ends = intervals.merge(starts, ends)
    return int((merged_ends - merged_starts).sum())


@pytest.mark.parametrize("in_order", [True, False])
def test_the_length_is_the_unions_over_chunks_in_any_order(monkeypatch: pytest.MonkeyPatch, in_order: bool) -> None:
    # GIVEN overlapping intervals (nested, touching, apart), read a few at a time
    rng = np.random.default_rng(7)
    monkeypatch.setattr(chunks, "CHUNK_ROWS", 7)
    for count in (1, 2, 7, 8, 100):
        starts = rng.integers(0, 1_000, count).astype(np.int64)
        starts = np.sort(starts) if in_order else starts
        ends = starts + rng.integers(0, 200, count)
        # WHEN their covered length is found; THEN it is that of their union, overlaps counted once
        assert intervals.length(starts, ends) == _union_ns(starts, ends)


def test_intervals_that_end_before_they_start_are_taken_as_the_union_takes_them() -> None:
    # GIVEN an interval that ends before it starts, among others; WHEN its length is found: THEN the union's
    starts, ends = np.array([0, 3, 10], np.int64), np.array([5, 1, 12], np.int64)
    assert intervals.length(starts, ends) == _union_ns(starts, ends)
    assert intervals.length(np.zeros(0, np.int64), np.zeros(0, np.int64)) == 0

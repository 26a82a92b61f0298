"""Rows grouped by integer codes: group numbers, exact sums and distinct counts, on both the
table path (codes close together) and the sorted path (codes spread out)."""

from __future__ import annotations

import numpy as np
import pytest

from kinetoscope.analysis._tables import chunks, code_groups


def _by_tuple(codes: list[np.ndarray], group: np.ndarray) -> dict[tuple[int, ...], set[int]]:
    found: dict[tuple[int, ...], set[int]] = {}
    for row, key in enumerate(zip(*(c.tolist() for c in codes), strict=True)):
        found.setdefault(key, set()).add(int(group[row]))
    return found


def test_rows_with_the_same_code_tuple_share_a_group_and_others_do_not() -> None:
    # GIVEN two key columns, one of them spread far (the sorted path)
    op = np.asarray([2, 0, 2, 1, 0, 2])
    dims = np.asarray([5, 5, 5, 7, 9, 3]) * 10**9
    group, groups = code_groups.grouped([op, dims], [3, 10**10])
    # THEN each distinct tuple is one group, numbered 0..groups-1
    by_tuple = _by_tuple([op, dims], group)
    assert all(len(numbers) == 1 for numbers in by_tuple.values())
    assert groups == len(by_tuple) == 5 and sorted(set(group.tolist())) == list(range(5))
    empty, none = code_groups.grouped([op[:0]], [3])
    assert (len(empty), none) == (0, 0)


def test_sums_are_exact_beyond_float_precision_and_counts_are_distinct_values() -> None:
    group = np.asarray([0, 1, 0, 1])
    big = np.asarray([2**60, 1, 3, 2**55 + 1])  # float64 would round these
    assert code_groups.sums(group, big, 3).tolist() == [2**60 + 3, 2**55 + 2, 0]
    assert code_groups.sums(group, np.asarray([4, 5, 6, 7]), 2).tolist() == [10, 12]
    # a value in one group only (the table path), and one value in two groups (the sorted path)
    assert code_groups.distinct_counts(group, np.asarray([-1, 8, -1, 9]), 3).tolist() == [1, 2, 0]
    assert code_groups.distinct_counts(group, np.asarray([4, 4, 5, 4]), 2).tolist() == [2, 1]
    assert code_groups.one_row_each(np.asarray([1, 0, 1]), 2)[0] == 1


def test_sums_read_a_chunk_of_rows_at_a_time_are_those_of_all_rows_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN 100 rows of 32- and 64-bit values (int32's extremes among them) in 4 groups, summed 32 rows at a time
    group = np.arange(100) % 3
    values = (np.arange(100) * 7919 % 1000 - 500).astype(np.int32)
    values[[5, 50]] = [2**31 - 1, -(2**31)]
    expected = [int(values[group == g].astype(np.int64).sum()) for g in range(3)] + [0]
    monkeypatch.setattr(chunks, "CHUNK_ROWS", 32)
    # WHEN they are summed per group (one group more than the rows name); THEN exactly, in 64 bits
    for typed in (values, values.astype(np.int64)):
        found = code_groups.sums(group, typed, 4)
        assert found.dtype == np.int64 and found.tolist() == expected

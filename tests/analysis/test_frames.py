"""The helpers the analyses share: splitting a table per rank."""

from __future__ import annotations

import pyarrow as pa

from kinetoscope.analysis.frames import per_rank


def _split(table: pa.Table) -> list[tuple[tuple[str, int], list[int]]]:
    return [(key, part.column("id").to_pylist()) for key, part in per_rank(table)]


def test_per_rank_gives_ranks_in_run_and_rank_order_whether_their_rows_are_together_or_not() -> None:
    # GIVEN the same rows, once grouped by rank (as a dataset holds them) and once interleaved
    together = pa.table({"run": ["b", "b", "a", "a", "a"], "rank": [1, 1, 2, 0, 0], "id": [1, 2, 3, 4, 5]})
    spread = pa.table({"run": ["a", "b", "a", "b", "a"], "rank": [0, 1, 2, 1, 0], "id": [4, 1, 3, 2, 5]})
    # WHEN split per rank THEN both come out in (run, rank) order, rows in their own order
    expected = [(("a", 0), [4, 5]), (("a", 2), [3]), (("b", 1), [1, 2])]
    assert _split(together) == expected
    assert _split(spread) == expected


def test_per_rank_of_one_rank_and_of_no_rows() -> None:
    one = pa.table({"run": ["r", "r"], "rank": [3, 3], "id": [7, 8]})
    assert _split(one) == [(("r", 3), [7, 8])]
    assert _split(one.slice(0, 0)) == []


def test_a_rank_whose_rows_come_back_later_is_gathered_once() -> None:
    table = pa.table({"run": ["r"] * 4, "rank": [0, 1, 0, 1], "id": [1, 2, 3, 4]})
    assert _split(table) == [(("r", 0), [1, 3]), (("r", 1), [2, 4])]


def test_positions_find_ids_whether_they_are_rows_increasing_or_shuffled() -> None:
    import numpy as np

    from kinetoscope.analysis.frames import positions

    wanted = np.asarray([2, -1, 0, 9, 1])
    assert positions(np.arange(3), wanted).tolist() == [2, -1, 0, -1, 1]  # ids 0..n-1
    assert positions(np.asarray([0, 1, 2, 5]), wanted).tolist() == [2, -1, 0, -1, 1]  # increasing
    assert positions(np.asarray([2, 9, 0, 1]), wanted).tolist() == [0, -1, 2, 1, 3]  # shuffled
    assert positions(np.zeros(0, np.int64), wanted).tolist() == [-1] * 5


def test_positions_of_increasing_ids_with_gaps_near_or_far_apart_agree_with_a_search() -> None:
    import numpy as np

    from kinetoscope.analysis.frames import positions

    # GIVEN increasing ids with gaps, close (a dense lookup) and far apart (a binary search), from 7 on
    rng = np.random.default_rng(0)
    for spread in (2, 50):
        ids = 7 + np.sort(rng.choice(200 * spread, size=200, replace=False)).astype(np.int64)
        wanted = rng.integers(-3, int(ids[-1]) + 5, size=500)
        # WHEN each wanted id is looked up, THEN it is found at its row, and -1 where no row has it
        expected = [int(np.flatnonzero(ids == w)[0]) if (ids == w).any() else -1 for w in wanted]
        assert positions(ids, wanted).tolist() == expected
        assert positions(ids, ids).tolist() == list(range(len(ids)))

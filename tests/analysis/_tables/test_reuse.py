"""Splits, masks and filters found once per table inside ``reuse.reusing()``, and the same as without."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from kinetoscope.analysis._tables.masks import is_in, not_empty, starts_with
from kinetoscope.analysis._tables.rank_slices import concatenated, per_rank, same_rows
from kinetoscope.analysis._tables.reuse import cached, reusing


def _events() -> pa.Table:
    return pa.table(
        {
            "run": ["a", "a", "a", "b"],
            "rank": [0, 0, 1, 0],
            "kind": ["kernel", "op", "kernel", "memcpy"],
            "name": ["gemm", "aten::mm", "gemm", "copy"],
            "id": [0, 1, 2, 3],
        }
    )


def test_inside_a_block_a_table_is_split_once_and_the_same_parts_come_back() -> None:
    events = _events()
    with reusing():
        first, second = list(per_rank(events)), list(per_rank(events))
    assert [key for key, _ in first] == [("a", 0), ("a", 1), ("b", 0)]
    assert all(a is b for (_, a), (_, b) in zip(first, second, strict=True))
    outside = list(per_rank(events))
    assert [part.to_pylist() for _, part in outside] == [part.to_pylist() for _, part in first]
    assert all(a is not b for (_, a), (_, b) in zip(first, outside, strict=True))  # nothing kept outside


def test_a_kept_mask_is_a_copy_so_a_caller_changing_it_does_not_change_the_next_answer() -> None:
    events = _events()
    with reusing():
        work = is_in(events, "kind", ("kernel",))
        work &= False  # a caller narrowing its mask in place
        again = is_in(events, "kind", ("kernel",))
        other = is_in(events, "kind", ("kernel", "memcpy"))
    assert again.tolist() == [True, False, True, False]
    assert other.tolist() == [True, False, True, True]


def test_a_kept_mask_costs_a_bit_per_row_and_each_rank_gets_its_own_rows() -> None:
    # GIVEN 1,001 rows of two ranks, the second starting at a row that is not a multiple of 8
    kinds = ["kernel" if row % 3 == 0 else "op" for row in range(1001)]
    events = pa.table({"run": ["a"] * 1001, "rank": [0] * 501 + [1] * 500, "kind": kinds})
    with reusing():
        # WHEN a mask is asked of each rank
        found = [is_in(part, "kind", ("kernel",)).tolist() for _, part in per_rank(events)]
        kept = cached(events, ("is_in", "kind", "kernel"), lambda: None)
    # THEN the mask the summary keeps holds a bit per row, and each rank's rows read as they are
    assert kept is not None and kept.nbytes == 126
    assert found == [[k == "kernel" for k in kinds[:501]], [k == "kernel" for k in kinds[501:]]]


def test_what_was_found_for_a_table_goes_with_it() -> None:
    import gc

    with reusing() as cache:
        events = _events()
        is_in(events, "kind", ("kernel",))
        assert len(cache) == 1
        del events
        gc.collect()
        assert not len(cache)


def test_a_table_equal_to_another_is_not_taken_for_it() -> None:
    # GIVEN two tables of equal values but different objects: results are kept per object
    calls: list[int] = []
    first, second = _events(), _events()
    with reusing():
        cached(first, "k", lambda: calls.append(1))
        cached(first, "k", lambda: calls.append(2))
        cached(second, "k", lambda: calls.append(3))
    assert calls == [1, 3]


def test_blocks_nest_into_the_outer_one() -> None:
    events = _events()
    with reusing() as outer:
        with reusing() as inner:
            assert inner is outer
            parts = list(per_rank(events))
        assert next(iter(per_rank(events)))[1] is parts[0][1]


def test_a_rank_slice_and_a_view_with_fewer_columns_get_the_whole_tables_mask_sliced() -> None:
    # GIVEN the events of three ranks, one block each, and a view of them without one column
    events = _events()
    with reusing():
        parts = [part for _, part in per_rank(events)]
        view = same_rows(events.drop_columns(["id"]), events)
        # WHEN masks are asked of each rank's rows and of the view
        inside = [is_in(part, "kind", ("kernel",)).tolist() for part in parts]
        named = [starts_with(part, "name", "aten::").tolist() for part in parts]
        of_view = not_empty(view, "name").tolist()
        kept = cached(events, ("is_in", "kind", "kernel"), lambda: None)
    # THEN each is what the rows alone give, found once on the whole table
    assert inside == [[True, False], [True], [False]]
    assert named == [[False, True], [False], [False]]
    assert of_view == [True] * 4
    assert kept is not None and np.unpackbits(kept, count=4).astype(bool).tolist() == [True, False, True, False]
    assert [is_in(part, "kind", ("kernel",)).tolist() for part in parts] == inside  # outside: afresh


def test_a_tables_ranks_joined_in_order_are_the_table_itself_and_other_parts_are_concatenated() -> None:
    events = _events()
    with reusing():
        parts = [part for _, part in per_rank(events)]
        # WHEN all its ranks are joined in order, THEN the table itself comes back; else a concatenation
        assert concatenated(parts) is events
        some = concatenated(parts[1:])
        reordered = concatenated(parts[::-1])
    assert some.column("id").to_pylist() == [2, 3]
    assert reordered.column("id").to_pylist() == [3, 2, 0, 1]
    assert concatenated(parts).column("id").to_pylist() == [0, 1, 2, 3]  # outside: joined afresh


def test_a_view_with_fewer_columns_is_split_at_its_tables_blocks() -> None:
    events = _events()
    with reusing():
        view = same_rows(events.drop_columns(["name"]), events)
        parts = list(per_rank(view))
        # THEN the view's ranks are its own rows, without the dropped column, at the table's blocks
        assert [key for key, _ in parts] == [key for key, _ in per_rank(events)]
        assert [part.column("id").to_pylist() for _, part in parts] == [[0, 1], [2], [3]]
        assert all("name" not in part.column_names for _, part in parts)
        assert is_in(parts[0][1], "kind", ("op",)).tolist() == [False, True]


def test_threads_in_a_block_share_its_cache_and_find_a_value_once() -> None:
    # GIVEN a value that takes a while to find, asked by two threads of one reusing() block
    import threading
    import time

    from kinetoscope.analysis._tables.reuse import threaded

    events, made, entered = _events(), [], threading.Event()

    def slow() -> object:
        made.append(threading.current_thread().name)
        entered.set()
        time.sleep(0.2)  # the other thread asks meanwhile (it waits; it does not find it again)
        return object()

    def first() -> object:
        return cached(events, "slow", slow)

    def second() -> object:
        entered.wait(5)
        return cached(events, "slow", slow)

    # WHEN both run in threads
    with reusing():
        a, b = threaded([first, second], workers=2)
        again = cached(events, "slow", slow)
    # THEN it was found once, and every asker got that one value, in the calls' order
    assert len(made) == 1
    assert a is b is again


def test_threaded_keeps_the_order_of_the_calls_and_runs_inline_with_one_worker() -> None:
    from kinetoscope.analysis._tables.reuse import threaded

    calls = [lambda n=n: n * n for n in range(20)]
    assert threaded(calls, workers=3) == [n * n for n in range(20)]
    assert threaded(calls, workers=1) == [n * n for n in range(20)]


def test_threaded_calls_after_each_after_every_call_even_one_that_raises() -> None:
    from kinetoscope.analysis._tables.reuse import threaded

    after: list[int] = []

    def failing() -> int:
        raise ValueError("no")

    for workers in (1, 2):
        del after[:]
        assert threaded([lambda: 1, lambda: 2], workers, lambda: after.append(1)) == [1, 2]
        assert after == [1, 1]
        with pytest.raises(ValueError, match="no"):
            threaded([failing], workers, lambda: after.append(2))
        assert after == [1, 1, 2]


def test_a_block_lets_go_of_its_tables_as_it_ends_without_the_garbage_collector() -> None:
    # GIVEN a table split inside a block of its own (a split and its parts refer back to the table)
    import gc
    import weakref

    gc.disable()
    try:
        events = _events()
        held = weakref.ref(events)
        with reusing(own=True):
            assert len(list(per_rank(events))) == 3
            del events
            assert held() is not None  # the cache keeps it while the block runs
        # THEN once the block ends nothing holds it, with no pass of the collector over cycles
        assert held() is None
    finally:
        gc.enable()


def test_a_block_of_its_own_inside_another_keeps_its_own_findings() -> None:
    events = _events()
    with reusing() as outer:
        with reusing(own=True) as inner:
            assert inner is not outer
            list(per_rank(events))
        with reusing() as same:
            assert same is outer
            assert outer.peek(events, "per_rank") is None

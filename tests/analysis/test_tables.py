"""The helpers the analyses share: splitting a table per rank."""

from __future__ import annotations

import pyarrow as pa

from kinetoscope.analysis._tables.rank_slices import per_rank


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

    from kinetoscope.analysis._tables.id_lookup import positions

    wanted = np.asarray([2, -1, 0, 9, 1])
    assert positions(np.arange(3), wanted).tolist() == [2, -1, 0, -1, 1]  # ids 0..n-1
    assert positions(np.asarray([0, 1, 2, 5]), wanted).tolist() == [2, -1, 0, -1, 1]  # increasing
    assert positions(np.asarray([2, 9, 0, 1]), wanted).tolist() == [0, -1, 2, 1, 3]  # shuffled
    assert positions(np.zeros(0, np.int64), wanted).tolist() == [-1] * 5


def test_positions_of_increasing_ids_with_gaps_near_or_far_apart_agree_with_a_search() -> None:
    import numpy as np

    from kinetoscope.analysis._tables.id_lookup import positions

    # GIVEN increasing ids with gaps, close (a dense lookup) and far apart (a binary search), from 7 on
    rng = np.random.default_rng(0)
    for spread in (2, 50):
        ids = 7 + np.sort(rng.choice(200 * spread, size=200, replace=False)).astype(np.int64)
        wanted = rng.integers(-3, int(ids[-1]) + 5, size=500)
        # WHEN each wanted id is looked up, THEN it is found at its row, and -1 where no row has it
        expected = [int(np.flatnonzero(ids == w)[0]) if (ids == w).any() else -1 for w in wanted]
        assert positions(ids, wanted).tolist() == expected
        assert positions(ids, ids).tolist() == list(range(len(ids)))


def test_id_positions_of_a_rank_are_those_of_its_ids_and_one_lookup_serves_every_ask() -> None:
    import numpy as np

    from kinetoscope.analysis._tables import reuse
    from kinetoscope.analysis._tables.id_lookup import id_positions, positions
    from kinetoscope.analysis._tables.rank_slices import per_rank

    # GIVEN two ranks whose ids have gaps (a dense lookup) and a wanted id of the other rank
    table = pa.table({"run": ["r"] * 6, "rank": [0, 0, 0, 1, 1, 1], "id": [10, 12, 15, 20, 21, 40]})
    wanted = np.asarray([15, 20, 10, 11, 99])
    with reuse.reusing() as cache:
        for (_, rank), part in per_rank(table):
            # WHEN looked up twice THEN the rows are those positions() finds, from one lookup
            ids = part.column("id").to_numpy()
            assert id_positions(part, wanted).tolist() == positions(ids, wanted).tolist()
            first = cache.peek(table, ("id_lookup", 3 * rank, 3))
            assert first is not None
            id_positions(part, wanted)
            assert cache.peek(table, ("id_lookup", 3 * rank, 3)) is first
    assert id_positions(table, wanted).tolist() == [2, 3, 0, -1, -1]  # outside a block: computed afresh


def test_a_rank_slice_split_again_is_itself() -> None:
    from kinetoscope.analysis._tables import reuse

    table = pa.table({"run": ["r"] * 4, "rank": [0, 0, 1, 1], "id": [1, 2, 3, 4]})
    with reuse.reusing():
        parts = list(per_rank(table))
        for key, part in parts:
            again = list(per_rank(part))
            assert [k for k, _ in again] == [key]
            assert again[0][1] is part


def test_group_sums_by_counting_small_codes_agree_with_grouping_by_sort() -> None:
    import numpy as np

    from kinetoscope.analysis._tables.group_sums import group_sums

    # GIVEN codes, groups in order of first row: small ones (counted) and the same spread far apart (sorted)
    code = np.asarray([3, 1, 3, 0, 1, 3], dtype=np.int32)
    values = [np.asarray([5, 7, 1, 2, 2, 10]), np.asarray([1, 1, 1, 1, 1, 1], dtype=np.int32)]
    for codes in (code, code.astype(np.int64) * 10**9):
        # WHEN grouped THEN each group's code, first row, rows and int64 sums, in order of first row
        groups = group_sums(codes, values)
        assert (groups.code // max(int(codes.max()) // 3, 1)).tolist() == [3, 1, 0]
        assert groups.first.tolist() == [0, 1, 3]
        assert groups.rows.tolist() == [3, 2, 1]
        assert [s.tolist() for s in groups.sums] == [[16, 9, 2], [3, 2, 1]]
        assert all(s.dtype == np.int64 for s in groups.sums)
    assert group_sums(np.zeros(0, np.int64), values[:0]).code.tolist() == []


def test_where_gives_the_same_rows_whether_it_takes_a_few_or_filters_many() -> None:
    import numpy as np

    from kinetoscope.analysis._tables.selection import where

    table = pa.table({"id": np.arange(1000), "name": pa.array([f"n{i % 7}" for i in range(1000)]).dictionary_encode()})
    for kept in ([3], [3, 500, 999], list(range(0, 1000, 2)), []):
        mask = np.zeros(1000, dtype=bool)
        mask[kept] = True
        found = where(table, mask)
        assert found.schema == table.schema
        assert found.to_pylist() == table.filter(pa.array(mask)).to_pylist()


def test_string_tests_on_dictionaries_hold_whether_none_one_some_or_every_value_matches() -> None:
    import pyarrow.compute as pc

    from kinetoscope.analysis._tables.column_arrays import string_mask

    # GIVEN a dictionary column with a null row, and tests matching none, one, two and every value
    names = pa.chunked_array([pa.array(["a", "b", None, "c", "a"]).dictionary_encode()])
    table = pa.table({"name": names})
    tests = {
        "none": lambda s: pc.equal(s, "z"),
        "one": lambda s: pc.equal(s, "a"),
        "two": lambda s: pc.is_in(s, value_set=pa.array(["a", "c"])),
        "every": lambda s: pc.not_equal(s, "z"),
    }
    expected = {
        "none": [False] * 5,
        "one": [True, False, False, False, True],
        "two": [True, False, False, True, True],
        "every": [True, True, False, True, True],  # a null row matches nothing
    }
    for label, test in tests.items():
        assert string_mask(table, "name", test).tolist() == expected[label], label


def test_where_keeps_a_table_of_one_chunk_columns_in_one_chunk_beside_a_column_of_many() -> None:
    import numpy as np

    from kinetoscope.analysis._tables.selection import where

    # GIVEN a table whose args column comes in three chunks (row groups) and the rest in one
    args = pa.chunked_array([pa.array(["a", "b"]), pa.array(["c", "d"]), pa.array(["e", "f"])])
    table = pa.table({"id": pa.chunked_array([pa.array(range(6))]), "args": args})
    mask = np.asarray([True, False, True, True, False, True])
    # WHEN filtered THEN the same rows as Arrow's filter, and the one-chunk column still in one chunk
    found = where(table, mask)
    assert found.schema == table.schema
    assert found.to_pylist() == table.filter(pa.array(mask)).to_pylist()
    assert found.column("id").num_chunks == 1


def test_prepared_by_several_threads_is_the_table_one_thread_prepares() -> None:
    from kinetoscope.analysis.prepare import prepared

    # GIVEN events of two Parquet parts (chunks with their own dictionaries), framework rows with shapes
    def part(run: str, names: list[str], layers: list[str], args: list[str | None]) -> pa.Table:
        return pa.table(
            {
                "run": [run] * len(names),
                "name": pa.array(names).dictionary_encode(),
                "layer": pa.array(layers).dictionary_encode(),
                "kind": pa.array(["op" if layer == "framework" else "kernel" for layer in layers]).dictionary_encode(),
                "ts_ns": pa.array(range(len(names)), pa.int64()),
                "args": args,
            }
        )

    events = pa.concat_tables(
        [
            part("a", ["mm", "k"], ["framework", "device"], ['{"Input Dims":[[2, 3]]}', '{"Input Dims":[[9]]}']),
            part("b", ["add", "mm", "k"], ["framework", "framework", "device"], [None, '{"Input Dims":[[4]]}', None]),
        ]
    )
    # WHEN it is prepared by one thread and by three
    one, three = prepared({"events": events})["events"], prepared({"events": events}, threads=3)["events"]
    # THEN both are the same table: every column but args in one chunk, the shapes of the framework rows
    assert three.schema == one.schema
    assert three.equals(one)
    assert all(three.column(name).num_chunks == 1 for name in three.column_names if name != "args")
    assert three.column("input_dims").to_pylist() == ["[[2,3]]", None, None, "[[4]]", None]
    assert three.column("run").type == pa.dictionary(pa.int8(), pa.string())  # few runs: 8-bit indices


def test_prepared_by_several_threads_of_events_without_args_adds_no_shapes() -> None:
    from kinetoscope.analysis.prepare import prepared

    parts = [pa.table({"layer": pa.array(["framework"]).dictionary_encode(), "id": [i]}) for i in (1, 2)]
    events = pa.concat_tables(parts)
    found = prepared({"events": events}, threads=2)["events"]
    assert found.column_names == ["layer", "id"]
    assert found.column("id").num_chunks == 1 and found.column("id").to_pylist() == [1, 2]


def test_device_rows_of_a_view_without_args_filter_no_args() -> None:
    import numpy as np

    from kinetoscope.analysis._tables import reuse
    from kinetoscope.analysis._tables.rank_slices import per_rank
    from kinetoscope.analysis._tables.selection import device_work_rows, where, without_args
    from kinetoscope.analysis.prepare import prepared

    # GIVEN two ranks' events with args, kernels among their ops
    events = pa.table(
        {
            "run": ["r"] * 5,
            "rank": pa.array([0, 0, 0, 1, 1], pa.int32()),
            "kind": pa.array(["op", "kernel", "memcpy", "kernel", "op"]).dictionary_encode(),
            "ts_ns": pa.array([1, 2, 3, 4, 5], pa.int64()),
            "args": ['{"a":1}', '{"b":2}', None, '{"c":3}', "{}"],
        }
    )
    with reuse.reusing():
        whole = prepared({"events": events})["events"]
        for (_, rank), part in per_rank(whole):
            # WHEN a rank's device rows are asked without args
            found = device_work_rows(without_args(part))
            # THEN they are its kernels and copies, and no table's rows were filtered with their args
            work = np.isin(part.column("kind").to_pylist(), ["kernel", "memcpy"])
            expected = where(part, work).drop_columns(["args"])
            assert found.equals(expected), rank
        assert reuse.peek(whole, "device_work") is None
        assert reuse.peek(without_args(whole), "device_work") is not None


def test_prepared_by_several_threads_of_no_events_is_the_table_one_thread_prepares() -> None:
    from kinetoscope.analysis.prepare import prepared

    empty = pa.table(
        {
            "layer": pa.array([], pa.string()).dictionary_encode(),
            "kind": pa.array([], pa.string()).dictionary_encode(),
            "args": pa.array([], pa.string()),
        }
    )
    one, two = prepared({"events": empty})["events"], prepared({"events": empty}, threads=2)["events"]
    assert two.schema == one.schema and two.num_rows == 0


def test_run_encoded_chunk_by_chunk_is_the_dictionary_of_one_encoding() -> None:
    import pyarrow.compute as pc

    from kinetoscope.analysis.prepare import encoded_by_chunk

    # GIVEN run columns of parts: one run per chunk, a run twice, a chunk of two runs, nulls, no rows
    cases = [
        [["b", "b"], ["a"], ["b", "b", "b"]],
        [["x", "y", "x"], ["y"], []],
        [["r", None], ["r"]],
        [[]],
    ]
    for chunks in cases:
        column = pa.chunked_array([pa.array(chunk, pa.string()) for chunk in chunks], pa.string())
        # WHEN encoded chunk by chunk THEN, dictionaries unified, it is the one encoding's column
        found = pa.table({"run": encoded_by_chunk(column)}).unify_dictionaries().column("run")
        expected = pa.table({"run": pc.dictionary_encode(column)}).unify_dictionaries().column("run")
        assert found.type == expected.type
        assert found.to_pylist() == expected.to_pylist() == column.to_pylist()
        dictionaries = [chunk.dictionary.to_pylist() for chunk in found.chunks]
        assert dictionaries == [chunk.dictionary.to_pylist() for chunk in expected.chunks], chunks

"""Allocation analyses over memory-snapshot rows: the top allocating stacks."""

from __future__ import annotations

import pyarrow as pa

from kinetoscope.analysis import ANALYSES_BY_NAME, TopOptions
from kinetoscope.dataset.schema import TABLES_BY_NAME


def _tables() -> dict[str, pa.Table]:
    # GIVEN rank 0 allocating from stacks 7 (100 + 50 bytes), 3 (200), 9 (150, after 7) and 5 (10),
    # and rank 1 from stack 3 once; stacks 3 and 7 have a frame, 9 and 5 none
    base = {"run": "r", "session": "s", "addr": 0, "alloc_ts_ns": 0, "free_ts_ns": -1, "device": 0, "event_id": -1}
    sizes = [(0, 7, 100), (0, 3, 200), (0, 7, 50), (0, 9, 150), (0, 5, 10), (1, 3, 64)]
    allocations = pa.Table.from_pylist(
        [{**base, "rank": rank, "stack_id": stack, "size_bytes": size} for rank, stack, size in sizes],
        schema=TABLES_BY_NAME["allocations"].full_schema(),
    )
    frame = {"run": "r", "rank": 0, "parent_id": -1, "file": "train.py"}
    frames = pa.Table.from_pylist(
        [{**frame, "stack_id": 3, "name": "forward", "line": 10}, {**frame, "stack_id": 7, "name": "step", "line": 4}],
        schema=TABLES_BY_NAME["frames"].full_schema(),
    )
    return {"allocations": allocations, "frames": frames}


def test_top_allocation_stacks_rank_stacks_by_bytes_ties_in_first_seen_order() -> None:
    stacks = ANALYSES_BY_NAME["top_allocation_stacks"]
    found = [
        (r["rank"], r["stack_id"], r["frame"], r["size_bytes"], r["allocations"]) for r in stacks(_tables()).to_pylist()
    ]
    assert found == [
        (0, 3, "forward (train.py:10)", 200, 1),
        (0, 7, "step (train.py:4)", 150, 2),  # 150 bytes as stack 9, but seen first
        (0, 9, "(unknown)", 150, 1),
        (0, 5, "(unknown)", 10, 1),
        (1, 3, "forward (train.py:10)", 64, 1),
    ]
    top_two = stacks(_tables(), TopOptions(top=2)).to_pylist()
    assert [(r["rank"], r["stack_id"]) for r in top_two] == [(0, 3), (0, 7), (1, 3)]


def _counters(rows: list[tuple[int, str | None, int, float]]) -> pa.Table:
    """Counter rows (rank, name, ts_ns, value) of run "r", in two chunks whose name dictionaries differ."""
    schema = TABLES_BY_NAME["counters"].full_schema()
    base = {"run": "r", "session": "s", "unit": "B", "device": 0}
    half = len(rows) // 2
    parts = [
        pa.Table.from_pylist(
            [{**base, "rank": rank, "name": name, "ts_ns": ts, "value": value} for rank, name, ts, value in part],
            schema=schema,
        )
        for part in (rows[:half], rows[half:])
    ]
    return pa.concat_tables(parts)


def test_device_memory_peaks_only_memory_counters_with_names_of_two_dictionaries_and_a_null() -> None:
    # GIVEN memory and other counters of two ranks, a null name among them, names coded by two dictionaries
    counters = _counters(
        [
            (0, "device 0 memory allocated", 1, 10.0),
            (0, "host utilisation (%)", 2, 99.0),
            (0, None, 3, 1e9),
            (1, "device 0 memory reserved", 1, 7.0),
            (0, "device 0 memory allocated", 4, 30.0),
            (0, "host allocator reserved", 5, 5.0),
            (1, "device 0 memory reserved", 6, 3.0),
            (1, "process CPU", 7, 50.0),
        ]
    )
    assert counters.column("name").num_chunks == 2
    found = ANALYSES_BY_NAME["device_memory"]({"counters": counters}).to_pylist()
    assert [(r["rank"], r["counter"], r["peak_bytes"]) for r in found] == [
        (0, "device 0 memory allocated", 30.0),
        (0, "host allocator reserved", 5.0),
        (1, "device 0 memory reserved", 7.0),
    ]

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

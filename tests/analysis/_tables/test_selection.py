"""Rows chosen from a table: the device work of a table with ``args`` and of its view without them."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables.reuse import reusing
from kinetoscope.analysis._tables.selection import device_work_rows, gathered, where, without_args

from ...arrow_pools import arrow_counted


def _buffer_addresses(table: pa.Table, name: str) -> list[int]:
    return [buffer.address for chunk in table.column(name).chunks for buffer in chunk.buffers() if buffer is not None]


def test_the_device_work_of_a_table_with_args_shares_its_other_columns_with_that_of_its_view() -> None:
    # GIVEN events with args, kernels among host ops
    events = pa.table(
        {
            "kind": ["op", "kernel", "op", "memcpy", "kernel"],
            "ts_ns": [0, 1, 2, 3, 4],
            "args": ["", '{"grid": 1}', "", "", '{"grid": 2}'],
        }
    )
    with reusing():
        # WHEN the device work is asked of the table and of its view without args
        whole = device_work_rows(events)
        lean = device_work_rows(without_args(events))
        # THEN the rows are the same, and the columns both hold are held once
        assert whole.to_pylist() == [events.to_pylist()[row] for row in (1, 3, 4)]
        assert lean.to_pylist() == [{k: v for k, v in row.items() if k != "args"} for row in whole.to_pylist()]
        assert _buffer_addresses(whole, "ts_ns") == _buffer_addresses(lean, "ts_ns")
        assert whole.schema == events.schema


def test_a_few_rows_of_a_table_with_chunked_args_are_taken_without_joining_its_chunks() -> None:
    # GIVEN 40,000 rows whose args come in 20 chunks (one per Parquet row group, 8 MB of text)
    rows = 40_000
    text = [f'{{"External id": {i}, "pad": "{"x" * 180}"}}' for i in range(rows)]
    table = pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64)),
            "args": pa.chunked_array([pa.array(text[at : at + 2_000]) for at in range(0, rows, 2_000)]),
        }
    )
    mask = np.arange(rows) % 1_000 == 7
    # WHEN one row in a thousand is chosen, Arrow's allocations counted
    with arrow_counted() as pool:
        found = where(table, mask)
    # THEN they are the rows a take gives, and the args are gathered chunk by chunk: not a copy of
    # all of them (a chunked column's take joins every chunk first)
    assert found.equals(table.take(np.flatnonzero(mask)))
    assert pool.max_memory() < table.column("args").nbytes / 10


def test_rows_out_of_order_are_gathered_as_a_take_gives_them() -> None:
    # GIVEN text in three chunks and rows out of order, one of them twice (launches in time order)
    column = pa.chunked_array([pa.array(["a", "b"]), pa.array(["c", "d", "e"]), pa.array(["f"])])
    rows = np.asarray([5, 0, 3, 0, 2])
    # THEN the chunk-by-chunk gather gives what a take gives, in one chunk
    found = gathered(column, rows)
    assert found.num_chunks == 1
    assert found.to_pylist() == column.take(pa.array(rows)).to_pylist() == ["f", "a", "d", "a", "c"]

"""Rows chosen from a table: the device work of a table with ``args`` and of its view without them."""

from __future__ import annotations

import pyarrow as pa

from kinetoscope.analysis._tables.reuse import reusing
from kinetoscope.analysis._tables.selection import device_work_rows, without_args


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

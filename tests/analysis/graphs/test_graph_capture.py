"""The kernel a launch made during a graph capture names (``graph_capture._named``), read from the
args of the launches: a few rows of a column that comes in one chunk per Parquet row group."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from kinetoscope.analysis.graphs import graph_capture

from ...arrow_pools import arrow_counted


def test_the_kernels_of_a_few_launches_are_read_without_joining_the_args_chunks() -> None:
    # GIVEN 40,000 events whose args come in 20 chunks (8 MB of text); every thousandth one a
    # launch naming its kernel, the launches of a capture in the reverse order of their rows
    rows = 40_000
    text = [json.dumps({"kernel": f"k{i}"} if i % 1_000 == 0 else {"External id": i, "pad": "x" * 180})
            for i in range(rows)]  # fmt: skip
    args = pa.chunked_array([pa.array(text[at : at + 2_000]) for at in range(0, rows, 2_000)])
    events = pa.table(
        {
            "id": pa.array(np.arange(rows, dtype=np.int64)),
            "op_id": pa.array(np.full(rows, -1, dtype=np.int64)),
            "name": pa.array(["cudaLaunchKernel"] * rows),
            "args": args,
        }
    )
    launches = np.arange(0, rows, 1_000)[::-1].copy()
    # WHEN the launches' kernels are read, Arrow's allocations counted
    with arrow_counted() as pool:
        names, _ = graph_capture._named(events, launches, set())
    # THEN each launch gets its own kernel, in the launches' order, and the texts are gathered
    # chunk by chunk: not a copy of all the args (a chunked column's take joins every chunk first)
    assert names == [f"k{i}" for i in launches.tolist()]
    assert pool.max_memory() < args.nbytes / 10

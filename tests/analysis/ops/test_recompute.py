"""Activation recomputation on a tiny GPU trace built here: a forward op re-run inside a backward
node is recomputation, the backward formula's own ops are not; times are the device time under them."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from kinetoscope.analysis import ANALYSES_BY_NAME
from kinetoscope.analysis.ops import recompute

from ...arrow_pools import arrow_counted
from ..test_analyses import events

SEQ = json.dumps({"Sequence number": 7})
NODE = "autograd::engine::evaluate_function: AddmmBackward0"


def _tables() -> dict[str, pa.Table]:
    kernel = {"category": "kernel", "layer": "device", "device": 0, "tid": 7}
    rows = [
        {"name": "aten::linear", "ts_ns": 0, "dur_ns": 100, "args": SEQ},  # 0: the forward
        {"name": NODE, "ts_ns": 1_000, "dur_ns": 2_000, "args": SEQ},  # 1: a backward node
        {"name": "AddmmBackward0", "ts_ns": 1_001, "dur_ns": 1_990, "parent_id": 1, "args": SEQ},  # 2
        {"name": "aten::linear", "ts_ns": 1_010, "dur_ns": 500, "parent_id": 2, "args": SEQ},  # 3: recomputed
        {"name": "aten::addmm", "ts_ns": 1_020, "dur_ns": 400, "parent_id": 3, "args": SEQ},  # 4: inside it
        {"name": "aten::mm", "ts_ns": 1_600, "dur_ns": 300, "parent_id": 2, "args": "{}"},  # 5: the formula's own
        {**kernel, "name": "gemm_fwd", "ts_ns": 50, "dur_ns": 300, "op_id": 0, "correlation": 1},
        {**kernel, "name": "gemm_recomputed", "ts_ns": 1_100, "dur_ns": 300, "op_id": 4, "correlation": 2},
        {**kernel, "name": "gemm_grad", "ts_ns": 1_700, "dur_ns": 200, "op_id": 5, "correlation": 3},
    ]
    table = events([{k: v for k, v in r.items() if k != "args"} for r in rows])
    return {"events": table.append_column("args", pa.array([r.get("args", "{}") for r in rows], pa.string()))}


def test_recomputed_forward_ops_and_their_device_time() -> None:
    total, linear = ANALYSES_BY_NAME["activation_recomputation"](_tables()).to_pylist()
    # the recomputed aten::linear once (its addmm inside it is not a second region), 300 ns of device time
    assert (linear["op"], linear["calls"], linear["time_ns"], linear["time_source"]) == ("aten::linear", 1, 300, "gpu")
    assert (total["calls"], total["time_ns"], total["cpu_ns"]) == (1, 300, 500)
    assert total["pct"] == 37.5  # of 800 ns of device busy time
    assert total["pct_of_backward"] == 60.0  # of the 500 ns launched under the backward node


def test_a_trace_without_backward_has_no_rows() -> None:
    forward_only = _tables()["events"].slice(0, 1)
    assert ANALYSES_BY_NAME["activation_recomputation"]({"events": forward_only}).num_rows == 0


def test_marked_ancestors_are_found_at_every_depth() -> None:
    # GIVEN a chain 40 deep, a second tree beside it, and rows marked here and there
    up = np.asarray([-1, *range(39), -1, 40, 41, 40])
    marked = np.zeros(len(up), dtype=bool)
    marked[[5, 41]] = True
    # WHEN each row asks whether a marked row encloses it THEN the rows below row 5 and below 41 do
    found = recompute.ancestor_marked(up, marked)
    assert np.flatnonzero(found).tolist() == [*range(6, 40), 42]


def test_the_sequence_numbers_of_a_few_rows_are_read_without_joining_the_args_chunks() -> None:
    # GIVEN 40,000 events whose args come in 20 chunks (one per Parquet row group, as read), 8 MB
    # of text, and one candidate row in a thousand, every other one with a sequence number
    rows = 40_000
    text = [json.dumps({"Sequence number": i} if i % 2000 == 0 else {"External id": i, "pad": "x" * 180})
            for i in range(rows)]  # fmt: skip
    args = pa.chunked_array([pa.array(text[at : at + 2_000]) for at in range(0, rows, 2_000)])
    table = pa.table({"args": args})
    candidates = np.arange(rows) % 1_000 == 0
    # WHEN the candidates with a sequence number are found, Arrow's allocations counted
    with arrow_counted() as pool:
        found = recompute._with_sequence(table, candidates)
    # THEN they are the rows found, and the candidates' texts are gathered chunk by chunk: not a
    # copy of all the args (a chunked column's take joins every chunk first)
    assert np.flatnonzero(found).tolist() == list(range(0, rows, 2_000))
    assert pool.max_memory() < args.nbytes / 10

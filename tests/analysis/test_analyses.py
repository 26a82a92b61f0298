"""The analyses on tiny tables built here: interval arithmetic, device breakdowns, self time, steps."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from kinetoscope.analysis import ANALYSES, ANALYSES_BY_NAME, EVENT_COLUMNS, run_all
from kinetoscope.analysis._tables import intervals
from kinetoscope.dataset.schema import TABLES_BY_NAME
from kinetoscope.model import kinds, ops

A = np.asarray


def events(rows: list[dict]) -> pa.Table:
    defaults = {
        "run": "r",
        "rank": 0,
        "layer": "framework",
        "category": "cpu_op",
        "tid": 1,
        "device": -1,
        "collective": "",
        "depth": 0,
        "parent_id": -1,
        "step": -1,
    }
    full = [{**defaults, "id": i, **row} for i, row in enumerate(rows)]
    for row in full:  # the model's kind, as ingest decides it
        row.setdefault("kind", (kinds.rule(row["category"], row["name"], "X") or kinds.UNKNOWN)[1])
    parent = A([r["parent_id"] for r in full], dtype=np.int64)  # ids are row positions here
    kind = A([kinds.KIND_CODES[r["kind"]] for r in full], dtype=np.int64)
    dur = A([r["dur_ns"] for r in full], dtype=np.int64)
    for row, own, op in zip(full, ops.self_ns(dur, parent, kind), ops.op_of(parent, kind, parent * 0 - 1), strict=True):
        row.setdefault("self_ns", int(own))
        row.setdefault("op_id", int(op))
    return pa.Table.from_pylist(full, schema=TABLES_BY_NAME["events"].full_schema()).select(list(EVENT_COLUMNS))


def work(name: str, ts: int, dur: int, *, category: str = "kernel", collective: str = "", rank: int = 0) -> dict:
    return {
        "name": name,
        "ts_ns": ts,
        "dur_ns": dur,
        "category": category,
        "layer": "device",
        "device": 0,
        "collective": collective,
        "rank": rank,
    }


def test_merge_and_sweep() -> None:
    starts, ends = intervals.merge(A([5, 0, 2, 20]), A([8, 3, 6, 25]))
    assert (starts.tolist(), ends.tolist()) == ([0, 20], [8, 25])
    # set 0 covers [0,10), set 1 covers [5,15): 5 alone, 5 together, 5 alone
    assert intervals.sweep([(A([0]), A([10])), (A([5]), A([15]))]) == {1: 5, 3: 5, 2: 5}


def test_device_breakdowns_follow_hta_definitions() -> None:
    # GIVEN compute [0,10), communication [5,25), a copy [30,32), so idle [25,30)
    tables = {
        "events": events(
            [
                work("gemm", 0, 10),
                work("ncclKernel_AllReduce", 5, 20, collective="allreduce"),
                work("Memcpy HtoD (Pageable -> Device)", 30, 2, category="gpu_memcpy"),
            ]
        )
    }
    temporal = ANALYSES_BY_NAME["temporal_breakdown"](tables).to_pylist()[0]
    assert (
        temporal["span_ns"],
        temporal["compute_ns"],
        temporal["communication_ns"],
        temporal["memory_ns"],
        temporal["idle_ns"],
    ) == (32, 10, 15, 2, 5)
    types = {
        r["kernel_type"]: r["time_ns"]
        for r in ANALYSES_BY_NAME["kernel_type_breakdown"](tables).to_pylist()
        if r["rank"] == 0
    }
    assert types == {"COMPUTATION": 5, "COMPUTATION overlapping COMMUNICATION": 5, "COMMUNICATION": 15, "MEMORY": 2}
    overlap = ANALYSES_BY_NAME["communication_overlap"](tables).to_pylist()[0]
    assert (overlap["communication_ns"], overlap["overlap_ns"], overlap["overlap_pct"]) == (20, 5, 25.0)


def test_cpu_only_rank_overlaps_host_collectives_with_other_threads_ops() -> None:
    # GIVEN no device work: gloo's all_reduce [0,100) on thread 2, compute [50,150) on thread 1
    # (an outer op with a nested one), and the c10d call that waits on thread 1 [150,200)
    gloo = {
        "name": "gloo:all_reduce",
        "ts_ns": 0,
        "dur_ns": 100,
        "layer": "runtime",
        "tid": 2,
        "category": "user_annotation",
        "collective": "allreduce",
    }
    tables = {
        "events": events(
            [
                gloo,
                {"name": "aten::matmul", "ts_ns": 50, "dur_ns": 100},
                {"name": "aten::mm", "ts_ns": 60, "dur_ns": 80, "depth": 1},
                {"name": "c10d::barrier", "ts_ns": 150, "dur_ns": 50},
            ]
        )
    }
    # THEN communication is the host collective, overlapped by compute for half of it
    overlap = ANALYSES_BY_NAME["communication_overlap"](tables).to_pylist()[0]
    assert (overlap["communication_ns"], overlap["overlap_ns"], overlap["overlap_pct"]) == (100, 50, 50.0)


def test_top_ops_self_time_subtracts_nested_ops_and_runtime_calls_as_key_averages_does() -> None:
    tables = {
        "events": events(
            [
                {"name": "aten::linear", "ts_ns": 0, "dur_ns": 100},
                {"name": "aten::addmm", "ts_ns": 10, "dur_ns": 60, "parent_id": 0, "depth": 1},
                {
                    "name": "cudaLaunchKernel",
                    "ts_ns": 20,
                    "dur_ns": 30,
                    "parent_id": 1,
                    "depth": 2,
                    "layer": "runtime",
                    "category": "cuda_runtime",
                },
            ]
        )
    }
    rows = {r["name"]: r for r in ANALYSES_BY_NAME["top_ops"](tables).to_pylist()}
    assert (rows["aten::linear"]["total_ns"], rows["aten::linear"]["self_ns"]) == (100, 40)
    assert rows["aten::addmm"]["self_ns"] == 30  # the launch inside it is its own row in key_averages


def test_step_spread_and_straggler() -> None:
    rows = []
    for rank, (step_ns, comm_ns) in enumerate([(100, 40), (100, 10), (90, 35)]):
        rows.append(
            {"name": "ProfilerStep#7", "ts_ns": 0, "dur_ns": step_ns, "category": "user_annotation", "rank": rank}
        )
        rows.append(work("ncclDevKernel_AllReduce", 0, comm_ns, collective="allreduce", rank=rank))
    tables = {"events": events(rows)}
    spread = ANALYSES_BY_NAME["step_times"](tables).to_pylist()[0]
    assert (spread["step"], spread["ranks"], spread["min_ns"], spread["max_ns"]) == (7, 3, 90, 100)
    result = ANALYSES_BY_NAME["stragglers"](tables).to_pylist()
    assert [r["rank"] for r in result if r["straggler"]] == [1]  # it waits least: the others wait for it
    assert [r["reason"] for r in result] == ["", "least communication (waited on least)", ""]


def test_a_single_rank_is_nobodys_straggler() -> None:
    tables = {"events": events([{"name": "ProfilerStep#1", "ts_ns": 0, "dur_ns": 5, "category": "user_annotation"}])}
    (only,) = ANALYSES_BY_NAME["stragglers"](tables).to_pylist()
    assert (only["straggler"], only["reason"]) == (False, "")


def test_every_analysis_runs_on_empty_tables() -> None:
    tables = {
        name: TABLES_BY_NAME[name].empty()
        for name in ("events", "counters", "sessions", "warnings", "allocations", "frames")
    }
    tables["events"] = tables["events"].select(list(EVENT_COLUMNS))
    results = run_all(tables)
    assert set(results) == {a.name for a in ANALYSES}
    assert all(table.num_rows == 0 for table in results.values())


def test_overview_counts_warnings_but_not_notes() -> None:
    # GIVEN one rank with a dropped-events warning (3 events) and a note on why a mode recorded nothing
    tables = {name: TABLES_BY_NAME[name].empty() for name in ("counters", "sessions", "allocations", "frames")}
    tables["events"] = events([{"name": "aten::mm", "ts_ns": 0, "dur_ns": 5}])
    base = {"run": "r", "rank": 0, "session": "s", "file": "", "where": ""}
    tables["warnings"] = pa.Table.from_pylist(
        [
            {**base, "kind": "dropped_events", "severity": "warning", "message": "lost", "count": 3},
            {**base, "kind": "mode_outcome", "severity": "note", "message": "DEVICE: no device", "count": 1},
        ],
        schema=TABLES_BY_NAME["warnings"].full_schema(),
    )
    # WHEN the overview is computed THEN only the warning counts
    (row,) = ANALYSES_BY_NAME["overview"](tables).to_pylist()
    assert row["warnings"] == 3


def test_top_ops_folds_a_chain_of_same_named_only_children_into_the_outermost() -> None:
    # GIVEN aten::sum calling aten::sum calling aten::sum (each the only op inside), and an aten::add
    # holding two aten::add: the chain folds (as key_averages counts it), the pair does not
    rows = [
        {"name": "aten::sum", "ts_ns": 0, "dur_ns": 100},
        {"name": "aten::sum", "ts_ns": 10, "dur_ns": 60, "parent_id": 0, "depth": 1},
        {"name": "aten::sum", "ts_ns": 20, "dur_ns": 30, "parent_id": 1, "depth": 2},
        {"name": "aten::add", "ts_ns": 200, "dur_ns": 100},
        {"name": "aten::add", "ts_ns": 210, "dur_ns": 20, "parent_id": 3, "depth": 1},
        {"name": "aten::add", "ts_ns": 240, "dur_ns": 20, "parent_id": 3, "depth": 1},
    ]
    found = {r["name"]: r for r in ANALYSES_BY_NAME["top_ops"]({"events": events(rows)}).to_pylist()}
    # THEN the chain is one call with all its self time; the pair's children are calls of their own
    assert (found["aten::sum"]["calls"], found["aten::sum"]["self_ns"], found["aten::sum"]["total_ns"]) == (1, 100, 100)
    assert (found["aten::add"]["calls"], found["aten::add"]["self_ns"]) == (3, 100)
    assert found["aten::sum"]["example_id"] == 0

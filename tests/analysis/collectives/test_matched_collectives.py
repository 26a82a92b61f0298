"""Collectives matched across ranks, waits and clock offsets, on tiny tables with hand-computed figures."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from kinetoscope.analysis import ANALYSES_BY_NAME, TopOptions
from kinetoscope.analysis._tables.selection import gathered
from kinetoscope.analysis.collectives.matched_collectives import bus_factor
from kinetoscope.dataset.schema import TABLES_BY_NAME
from kinetoscope.model import collectives

from ..test_analyses import events

EVERY = TopOptions(top=1_000_000)  # every instance


def kernel(rank: int, name: str, ts: int, dur: int, **meta: object) -> dict:
    """A NCCL kernel row of ``rank`` with Kineto's collective metadata in its args."""
    spelled = {"allreduce": "AllReduce", "allgather": "AllGather", "broadcast": "Broadcast"}[name]
    args = {"Collective name": name, **meta} if meta else {}
    return {"name": f"ncclDevKernel_{spelled}_Sum_f32_RING_LL", "category": "kernel", "layer": "device", "device": 0,
            "collective": name, "rank": rank, "ts_ns": ts, "dur_ns": dur, "args": json.dumps(args)}  # fmt: skip


def tables(rows: list[dict], hosts: dict[int, str] | None = None) -> dict[str, pa.Table]:
    args = [row.pop("args", "{}") for row in rows]
    built = events(rows)
    sessions = [{"run": "r", "rank": rank, "session": f"s{rank}", "host": host} for rank, host in (hosts or {}).items()]
    return {
        "events": built.append_column("args", pa.array(args, pa.string())),
        "sessions": pa.Table.from_pylist(sessions, schema=TABLES_BY_NAME["sessions"].full_schema()),
    }


def meta(seq: int, nelems: int, dtype: str, n: int, **more: object) -> dict[str, object]:
    return {"Seq": seq, "In msg nelems": nelems, "Out msg nelems": nelems, "dtype": dtype, "Group size": n,
            "Process Group Name": "0", **more}  # fmt: skip


def four_ranks() -> dict[str, pa.Table]:
    """Four ranks, one allreduce (4 MB) then one allgather (8 MB out); rank 3 comes late to both."""
    rows = []
    for rank in range(4):
        late = 300_000 if rank == 3 else 100_000 * rank
        reduce_meta = meta(7, 1_000_000, "Float", 4)  # 4,000,000 bytes
        rows.append(kernel(rank, "allreduce", 1_000_000 + late, 500_000 - late, **reduce_meta))
        gather_meta = meta(8, 1_000_000, "BFloat16", 4, **{"Out msg nelems": 4_000_000})  # 8,000,000 bytes out
        rows.append(kernel(rank, "allgather", 2_000_000 + 2 * late, 1_400_000 - 2 * late, **gather_meta))
    return tables(rows)


def test_bus_bandwidth_follows_nccl_tests() -> None:
    assert bus_factor("allreduce", 8) == 2 * 7 / 8
    assert bus_factor("allgather", 4) == bus_factor("reducescatter", 4) == bus_factor("alltoall", 4) == 3 / 4
    assert bus_factor("broadcast", 8) == bus_factor("sendrecv", 2) == bus_factor("reduce", 3) == 1.0
    assert bus_factor("barrier", 8) is None
    assert [collectives.canonical(n) for n in ("all_to_allv", "_allgather_base", "reduce_scatter_tensor")] == [
        "alltoall",
        "allgather",
        "reducescatter",
    ]


def test_instances_latency_bandwidth_and_the_late_rank() -> None:
    found = ANALYSES_BY_NAME["matched_collectives"](four_ranks(), EVERY).to_pylist()
    by_name = {r["collective"]: r for r in found}
    reduce, gather = by_name["allreduce"], by_name["allgather"]
    # allreduce: starts 1.0, 1.1, 1.2, 1.3 ms, all end at 1.5 ms: latency 200 µs (rank 3), 4 MB
    assert (reduce["number"], reduce["matched_by"], reduce["group"], reduce["ranks"]) == (7, "seq", "0", 4)
    assert (reduce["latency_ns"], reduce["max_duration_ns"], reduce["size_bytes"]) == (200_000, 500_000, 4_000_000)
    assert reduce["algbw_gb_s"] == 20.0  # 4e6 B / 200e3 ns
    assert reduce["busbw_gb_s"] == 30.0  # x 2(4-1)/4
    assert (reduce["last_rank"], reduce["max_skew_ns"]) == (3, 300_000)
    assert reduce["wait_ns"] == 300_000 + 200_000 + 100_000 + 0
    assert reduce["end_spread_ns"] == 0  # all four end together: matched right
    # allgather: 8 MB out (4M bf16 elements), latency 800 µs: 10 GB/s, busbw x (4-1)/4
    assert (gather["size_bytes"], gather["latency_ns"]) == (8_000_000, 800_000)
    assert (gather["algbw_gb_s"], gather["busbw_gb_s"]) == (10.0, 7.5)
    assert [r["collective"] for r in found] == ["allgather", "allreduce"]  # most waiting first
    assert gather["wait_ns"] == 2 * reduce["wait_ns"]


def test_each_ranks_arrival_at_the_costliest_instances() -> None:
    found = ANALYSES_BY_NAME["collective_arrivals"](four_ranks(), TopOptions(top=1)).to_pylist()
    # the allgather (twice the waiting): ranks start at 2.0, 2.2, 2.4, 2.6 ms and end together at 3.4
    assert [(r["collective"], r["number"], r["rank"]) for r in found] == [("allgather", 8, rank) for rank in range(4)]
    assert [r["skew_ns"] for r in found] == [0, 200_000, 400_000, 600_000]
    assert [r["wait_ns"] for r in found] == [600_000, 400_000, 200_000, 0]
    assert [r["last"] for r in found] == [False, False, False, True]
    assert [r["start_ts_ns"] + r["dur_ns"] for r in found] == [3_400_000] * 4
    assert len(ANALYSES_BY_NAME["collective_arrivals"](four_ranks(), EVERY)) == 8


def test_waits_per_rank() -> None:
    found = {r["rank"]: r for r in ANALYSES_BY_NAME["collective_waits"](four_ranks()).to_pylist()}
    # rank 0 waits 300 µs in the allreduce and 600 µs in the allgather; its wall time is 1.0 -> 3.4 ms
    zero = found[0]
    assert (zero["instances"], zero["collective_ns"], zero["wait_ns"]) == (2, 500_000 + 1_400_000, 900_000)
    assert (zero["wall_ns"], zero["wait_pct"]) == (2_400_000, 37.5)
    assert (zero["longest_wait_ns"], zero["longest_wait_in"]) == (600_000, "allgather seq 8 in group 0")
    assert (found[3]["wait_ns"], found[3]["arrived_last"]) == (0, 2)
    assert [found[r]["arrived_last"] for r in range(3)] == [0, 0, 0]


def test_seq_matches_across_a_missed_instance_and_order_is_the_fallback() -> None:
    # GIVEN rank 1's trace began after seq 1: by order its first allreduce would pair with seq 1
    rows = [
        kernel(0, "allreduce", 0, 100, **meta(1, 10, "Float", 2)),
        kernel(0, "allreduce", 1_000, 300, **meta(2, 10, "Float", 2)),
        kernel(1, "allreduce", 1_200, 100, **meta(2, 10, "Float", 2)),
    ]
    (only,) = ANALYSES_BY_NAME["matched_collectives"](tables(rows), EVERY).to_pylist()
    assert (only["number"], only["matched_by"], only["ranks"], only["latency_ns"]) == (2, "seq", 2, 100)
    assert only["size_bytes"] == 40 and only["algbw_gb_s"] == 0.4 and only["busbw_gb_s"] == 0.4  # 2(2-1)/2 = 1
    # WHEN the metadata is missing THEN instances are matched by their order on each rank, and said so
    bare = [kernel(0, "broadcast", 0, 100), kernel(1, "broadcast", 40, 60), kernel(0, "broadcast", 500, 50)]
    (order,) = ANALYSES_BY_NAME["matched_collectives"](tables(bare), EVERY).to_pylist()
    assert (order["matched_by"], order["number"], order["latency_ns"], order["size_bytes"]) == ("order", 0, 60, None)
    assert order["algbw_gb_s"] is None and order["wait_ns"] == 40
    # AND a rank whose window missed the first broadcast pairs its second with the others' first:
    # its end lies a whole iteration away, which end_spread_ns shows
    missed = [kernel(0, "broadcast", 0, 100), kernel(0, "broadcast", 1_000, 100), kernel(1, "broadcast", 1_050, 50)]
    (wrong,) = ANALYSES_BY_NAME["matched_collectives"](tables(missed), EVERY).to_pylist()
    assert (wrong["number"], wrong["end_spread_ns"]) == (0, 1_000)


def test_args_in_many_chunks_read_as_in_one() -> None:
    # GIVEN the args column cut into chunks of three rows (a dataset keeps one per row group)
    whole = four_ranks()
    args = whole["events"].column("args").combine_chunks()
    cut = pa.chunked_array([args.slice(at, 3) for at in range(0, len(args), 3)])
    events = whole["events"].set_column(whole["events"].schema.get_field_index("args"), "args", cut)
    # THEN a few rows' texts are gathered as one chunk, the same as a take; none gives none
    rows = np.asarray([0, 2, 3, 7])
    assert gathered(cut, rows).num_chunks == 1
    assert gathered(cut, rows).to_pylist() == args.take(pa.array(rows)).to_pylist()
    assert gathered(cut, rows[:0]).to_pylist() == []
    # AND the matched instances do not depend on where the chunks are cut
    found = ANALYSES_BY_NAME["matched_collectives"]({**whole, "events": events}, EVERY).to_pylist()
    assert found == ANALYSES_BY_NAME["matched_collectives"](whole, EVERY).to_pylist()
    assert [r["size_bytes"] for r in found] == [8_000_000, 4_000_000]


def test_host_collectives_stand_in_on_ranks_without_kernels() -> None:
    gloo = {"category": "user_annotation", "layer": "runtime", "kind": "collective", "collective": "allreduce"}
    rows = [
        {**gloo, "name": "gloo:all_reduce", "rank": 0, "ts_ns": 0, "dur_ns": 900},
        {**gloo, "name": "gloo:all_reduce", "rank": 1, "ts_ns": 700, "dur_ns": 200},
    ]
    (only,) = ANALYSES_BY_NAME["matched_collectives"](tables(rows), EVERY).to_pylist()
    assert (only["last_rank"], only["max_skew_ns"], only["latency_ns"], only["wait_ns"]) == (1, 700, 200, 700)


def shifted_pair(offset_ns: int, jitter_ns: tuple[int, ...]) -> list[dict]:
    """Two ranks, five allreduces; rank 1's clock runs ``offset_ns`` ahead, its ends off by ``jitter_ns``."""
    rows = []
    for i, jitter in enumerate(jitter_ns):
        start = 1_000_000 * i
        rows.append(kernel(0, "allreduce", start, 500_000, **meta(i, 10, "Float", 2)))
        rows.append(kernel(1, "allreduce", start + 300_000 + offset_ns, 200_000 + jitter, **meta(i, 10, "Float", 2)))
    return rows


def test_clock_offset_of_another_host_is_estimated_and_applied() -> None:
    built = tables(shifted_pair(5_000_000, (0, 1_000, -2_000, 500, 0)), {0: "node-a", 1: "node-b"})
    zero, one = ANALYSES_BY_NAME["clock_offsets"](built).to_pylist()
    assert (zero["clock"], zero["offset_ns"], zero["applied"]) == ("reference", 0, False)
    assert (one["host"], one["clock"], one["samples"], one["applied"]) == ("node-b", "node-b", 5, True)
    assert (one["offset_ns"], one["uncertainty_ns"]) == (5_000_000, 2_000)  # median jitter 0, worst 2 µs
    # THEN arrival skews are taken on the reference clock: rank 1 is 300 µs late, not 5.3 ms
    found = ANALYSES_BY_NAME["matched_collectives"](built, EVERY).to_pylist()
    assert {r["max_skew_ns"] for r in found} == {300_000} and {r["last_rank"] for r in found} == {1}


@pytest.mark.parametrize("hosts", [{0: "node-a", 1: "node-a"}, {}])
def test_one_host_or_unknown_hosts_share_the_reference_clock(hosts: dict[int, str]) -> None:
    built = tables(shifted_pair(5_000_000, (0, 0, 0, 0, 0)), hosts)
    zero, one = ANALYSES_BY_NAME["clock_offsets"](built).to_pylist()
    assert (one["clock"], one["offset_ns"], one["applied"]) == ("reference", 0, False)
    # each rank's ends measured against the median end of the reference clock's ranks, not applied
    assert (zero["measured_ns"], one["measured_ns"]) == (-2_500_000, 2_500_000)
    found = ANALYSES_BY_NAME["matched_collectives"](built, EVERY).to_pylist()
    assert {r["max_skew_ns"] for r in found} == {5_300_000}


def test_a_host_sharing_no_collective_with_the_reference_is_not_shifted() -> None:
    # GIVEN ranks 0 and 1 on host a meeting in an allreduce, ranks 2 and 3 on host b in a broadcast
    rows = [kernel(0, "allreduce", 0, 100), kernel(1, "allreduce", 40, 61),
            kernel(2, "broadcast", 50, 100), kernel(3, "broadcast", 60, 90)]  # fmt: skip
    built = tables(rows, {0: "a", 1: "a", 2: "b", 3: "b"})
    found = {r["rank"]: r for r in ANALYSES_BY_NAME["clock_offsets"](built).to_pylist()}
    # THEN host a is the reference (its ends 100 and 101 agree within 0.5 ns of their median) and
    # host b, with no instance to compare, gets no offset and is not shifted
    assert [(found[r]["clock"], found[r]["offset_ns"], found[r]["applied"]) for r in range(4)] == [
        ("reference", 0, False), ("reference", 0, False), ("b", None, False), ("b", None, False)]  # fmt: skip
    assert (found[2]["samples"], found[2]["uncertainty_ns"], found[2]["measured_ns"]) == (0, None, None)


def test_runs_are_matched_apart() -> None:
    # GIVEN two runs with the same ranks, each with one allreduce: an instance never spans runs
    rows = [kernel(0, "allreduce", 0, 100), kernel(1, "allreduce", 30, 70)]
    other = [{**kernel(0, "allreduce", 5_000, 100), "run": "s"}, {**kernel(1, "allreduce", 5_050, 50), "run": "s"}]
    found = ANALYSES_BY_NAME["matched_collectives"](tables(rows + other), EVERY).to_pylist()
    assert sorted((r["run"], r["ranks"], r["latency_ns"], r["max_skew_ns"]) for r in found) == [
        ("r", 2, 70, 30),
        ("s", 2, 50, 50),
    ]
    waits = ANALYSES_BY_NAME["collective_waits"](tables(rows + other)).to_pylist()
    assert [(w["run"], w["rank"], w["wait_ns"]) for w in waits] == [
        ("r", 0, 30),
        ("r", 1, 0),
        ("s", 0, 50),
        ("s", 1, 0),
    ]


def test_order_within_steps_survives_windows_that_cover_different_steps() -> None:
    # GIVEN rank 0 profiled steps 1-2 and rank 1 steps 2-3, one allreduce a step: by plain order
    # rank 0's step 1 would pair with rank 1's step 2
    rows = [
        {**kernel(0, "allreduce", 0, 100), "step": 1},
        {**kernel(0, "allreduce", 1_000, 100), "step": 2},
        {**kernel(1, "allreduce", 1_040, 60), "step": 2},
        {**kernel(1, "allreduce", 2_000, 100), "step": 3},
    ]
    (only,) = ANALYSES_BY_NAME["matched_collectives"](tables(rows), EVERY).to_pylist()
    assert (only["matched_by"], only["step"], only["number"], only["latency_ns"]) == ("step order", 2, 0, 60)
    assert only["end_spread_ns"] == 0
    # WHEN the ranks number their steps apart (no step on both) THEN plain order, as without steps
    apart = [{**row, "step": row["step"] + (10 if row["rank"] == 1 else 0)} for row in rows]
    found = ANALYSES_BY_NAME["matched_collectives"](tables(apart), EVERY).to_pylist()
    assert {(r["matched_by"], r["step"]) for r in found} == {("order", -1)} and len(found) == 2


def test_metadata_is_read_from_the_args_text() -> None:
    from kinetoscope.analysis.collectives.collective_meta import read_meta

    texts = pa.chunked_array([[
        '{"External id": 1, "Collective name": "allreduce", "Seq": 12, "In msg nelems": 2049000, '
        '"Out msg nelems": 2049000, "dtype": "Float", "Group size": 2, "Process Group Name": "0"}',
        '{"Sequence number": 5, "In msg nelems": 53, "Out msg nelems": 106, "dtype": "Long", "Process Group ID": 3}',
        '{"Seq": "7", "Process Group Name": "tp \\"0\\"", "In msg nelems": 4, "dtype": "Float8_e9"}',
        "{}",
        None,
    ]])  # fmt: skip
    meta = read_meta(texts)
    assert meta.group.tolist() == ["0", "3", 'tp \\"0\\"', "", ""]  # a name as written, escapes kept
    assert meta.seq.tolist() == [12, -1, 7, -1, -1]  # "Sequence number" (autograd's) is not Seq
    assert meta.size_bytes.tolist() == [8_196_000, 106 * 8, -1, -1, -1]  # an unknown dtype has no size
    assert meta.group_size.tolist() == [2, -1, -1, -1, -1]

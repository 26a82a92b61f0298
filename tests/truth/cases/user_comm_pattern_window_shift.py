"""A user's own all-to-all kernels, named communication by the user's ``--categories`` patterns,
on four ranks of one host; rank 2's window opens after an instance the other ranks still hold.

The kernels belong to no library the built-in rules know (``my_ep::dispatch_tokens``) and carry no
collective metadata: only the user's ``communication`` pattern makes them communication, and only
their order can pair them across ranks. Paired by plain order, rank 2's first dispatch would be
paired with the others' pre-window one and every later one shifted by one; aligned, the ranks'
ends of each instance are equal (one host, one clock).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.truth.cases.window_shift_one_host import (  # the same ranks, windows and timing, other kernels
    FIRST_STEP_US,
    KERNEL_US,
    PRE_END_US,
    PRE_START_US,
    RANKS,
    STEP_US,
    STEPS,
    WINDOW_US,
    instances,
)
from tests.truth.cases.window_shift_one_host import allreduce_times as dispatch_times
from tests.truth.harness import Case
from tests.truth.kineto import COMM_STREAM, RankTrace, write_traces

GEMM_US = 300.0
KERNEL = "void my_ep::dispatch_tokens<8, 7168>(my_ep::Params)"  # the user's library, by its template
PATTERNS = {"communication": ["^void my_ep::dispatch"]}


def traces() -> list[RankTrace]:
    out = []
    for rank in range(RANKS):
        t = RankTrace(rank=rank, world_size=RANKS, host="node-a")
        t.op("aten::empty", WINDOW_US[rank], 5.0)  # the window's first host event
        if WINDOW_US[rank] == 0.0:  # still running when this rank's window opened; launch not in the trace
            t.device_work(KERNEL, PRE_START_US[rank], PRE_END_US - PRE_START_US[rank], stream=COMM_STREAM,
                          correlation=900_000)
        for step in range(STEPS):
            start = FIRST_STEP_US + step * STEP_US
            t.step(10 + step, start, STEP_US - 50)
            mm = t.op("aten::mm", start + 10, 60)
            t.launch(mm, start + 20, "sm90_gemm_bf16", start + 40, GEMM_US)
            begin, end = dispatch_times(step)[rank]
            op = t.op("my_ep::dispatch", start + 100, 30)
            t.launch(op, start + 108, KERNEL, begin, end - begin, stream=COMM_STREAM)
        out.append(t)
    return out


def build(folder: Path) -> Path:
    return write_traces(folder, traces())


def hand_count() -> dict[str, Any]:
    """Per rank: its communication time (its dispatch kernels, which overlap nothing else), its wait
    (duration minus the instance's shortest) over the instances it is in, and how often it arrived
    last; the instances are the pre-window one (ranks 0, 1, 3) and the STEPS ones (all ranks)."""
    found = instances()
    comm_us = dict.fromkeys(range(RANKS), 0.0)
    wait_us = dict.fromkeys(range(RANKS), 0.0)
    last = dict.fromkeys(range(RANKS), 0)
    for instance in found:
        shortest = min(end - begin for begin, end in instance.values())
        for rank, (begin, end) in instance.items():
            comm_us[rank] += end - begin
            wait_us[rank] += (end - begin) - shortest
        last[max(instance, key=lambda r: instance[r][0])] += 1
    return {"comm_ns": {r: round(c * 1000) for r, c in comm_us.items()},
            "wait_ns": {r: round(w * 1000) for r, w in wait_us.items()}, "last": last, "instances": len(found)}


_COUNT = hand_count()

CASE = Case(
    name="user_comm_pattern_window_shift",
    situation="a user's own all-to-all kernels made communication by a --categories pattern, 4 ranks of one "
    "host, one rank's window opening after an instance the others still hold; no collective metadata",
    source="libkineto records device work still running when the window opens (no launch); the "
    "--categories file format (docs/model.md); kernels named as CUPTI demangles a template",
    truth="hand count",
    build=build,
    categories=PATTERNS,
    numbers={
        "summary:kernel_type_breakdown[rank=0,kernel_type=COMMUNICATION].time_ns": _COUNT["comm_ns"][0],
        "summary:kernel_type_breakdown[rank=2,kernel_type=COMMUNICATION].time_ns": _COUNT["comm_ns"][2],
        "summary:kernel_type_breakdown[rank=0,kernel_type=COMPUTATION].time_ns": round(STEPS * GEMM_US * 1000),
        "summary:matched_collectives.#": _COUNT["instances"],
        "summary:matched_collectives{collective=alltoall}.#": _COUNT["instances"],
        "summary:matched_collectives{ranks=4}.#": STEPS,
        "summary:matched_collectives{ranks=4}.max(end_spread_ns)": 0,
        "summary:matched_collectives{ranks=4}.values(last_rank)": [3] * STEPS,
        "summary:matched_collectives{ranks=4}.max(latency_ns)": round(KERNEL_US * 1000),
        "summary:collective_waits[rank=0].wait_ns": _COUNT["wait_ns"][0],
        "summary:collective_waits[rank=2].wait_ns": _COUNT["wait_ns"][2],
        "summary:collective_waits[rank=3].wait_ns": _COUNT["wait_ns"][3],
        "summary:collective_waits[rank=3].arrived_last": _COUNT["last"][3],
        "verify:findings.count(check=clock_skew)": 0,
        "verify:findings.count(check=clock_agreement)": 1,
    },
    forbidden_problems=("clock_skew",),
)

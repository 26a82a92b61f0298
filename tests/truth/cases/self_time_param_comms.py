"""Self time as ``key_averages`` counts it: NCCL scopes inside ``record_param_comms``, annotations
ranked, and torch's same-name fold with runtime children."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.truth.harness import Case
from tests.truth.kineto import COMM_STREAM, RankTrace

STEPS = 3
STEP_US = 30_000.0
HOST_CATEGORIES = ("cpu_op", "user_annotation", "cuda_runtime")


def _step(t: RankTrace, start: float) -> None:
    # an all-reduce as DLRM's rank 0 records it (public et_replay dlrm_kineto trace): record_param_comms (79)
    # > cudaStreamIsCapturing, cudaStreamWaitEvent, nccl:all_reduce (59) > waits and the kernel's launch
    rpc = start + 100
    t.op("record_param_comms", rpc, 79, **{"Collective name": "allreduce", "Group size": 1})
    t.x("cuda_runtime", "cudaStreamIsCapturing", rpc + 1, 1)
    t.x("cuda_runtime", "cudaStreamWaitEvent", rpc + 12, 1)
    scope = t.op("nccl:all_reduce", rpc + 16, 59, cat="user_annotation")
    t.x("cuda_runtime", "cudaStreamWaitEvent", rpc + 33, 1)
    t.launch(scope, rpc + 39, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", rpc + 60, 40, stream=COMM_STREAM)
    t.x("cuda_runtime", "cudaStreamWaitEvent", rpc + 69, 1)
    # a record_function scope of 22.8 ms around two ops (a rope_forward that key_averages lists)
    rope = start + 1000
    t.op("rope_forward", rope, 22_800, cat="user_annotation")
    t.op("aten::mul", rope + 100, 9_000)
    t.op("aten::add", rope + 10_000, 8_000)
    # aten::copy_ calling aten::copy_ and a runtime call: two children, torch keeps both calls
    copy = start + 25_000
    t.op("aten::copy_", copy, 300)
    t.op("aten::copy_", copy + 10, 200)
    t.x("cuda_runtime", "cudaMemcpyAsync", copy + 250, 20)
    # aten::to whose only child is aten::to: torch folds it into its parent (one call)
    t.op("aten::to", copy + 400, 300)
    t.op("aten::to", copy + 410, 250)


def trace() -> RankTrace:
    t = RankTrace(rank=0)
    for step in range(STEPS):
        start = step * (STEP_US + 100)
        t.step(step, start, STEP_US)
        _step(t, start)
    return t


def build(folder: Path) -> Path:
    return trace().write(folder)


def _inside(outer: dict[str, Any], inner: dict[str, Any]) -> bool:
    return bool(outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"])


def key_averages(t: RankTrace) -> dict[tuple[str, bool], dict[str, float]]:
    """torch's rules (``profiler_util.EventList``) over the host events: parents by containment on one
    thread, ``_remove_dup_nodes`` (a node whose parent has its name and one child goes), self time
    = time - children's time; grouped by (name with ``ProfilerStep*``, is an annotation)."""
    host = [e for e in t.events if e["cat"] in HOST_CATEGORIES]
    parent: dict[int, int | None] = {}
    for i, e in enumerate(host):
        around = [j for j, o in enumerate(host) if j != i and o["tid"] == e["tid"] and _inside(o, e)]
        parent[i] = min(around, key=lambda j: host[j]["dur"]) if around else None
    removed: set[int] = set()
    changed = True
    while changed:
        changed = False
        for i in range(len(host)):
            p = parent[i]
            kids = [k for k in parent if parent[k] == p and k not in removed] if p is not None else []
            if i not in removed and p is not None and host[p]["name"] == host[i]["name"] and kids == [i]:
                removed.add(i)
                for k, above in list(parent.items()):
                    if above == i:
                        parent[k] = p
                changed = True
    out: dict[tuple[str, bool], dict[str, float]] = {}
    for i, e in enumerate(host):
        if i in removed or e["cat"] == "cuda_runtime":
            continue
        children = [k for k in parent if parent[k] == i and k not in removed]
        name = "ProfilerStep*" if e["name"].startswith("ProfilerStep#") else e["name"]
        row = out.setdefault((name, e["cat"] == "user_annotation"), {"calls": 0, "self_us": 0.0})
        row["calls"] += 1
        row["self_us"] += e["dur"] - sum(host[k]["dur"] for k in children)
    return out


_KA = key_averages(trace())


def _self_ns(name: str, annotation: bool) -> int:
    return round(_KA[(name, annotation)]["self_us"] * 1000)


def _calls(name: str, annotation: bool = False) -> int:
    return int(_KA[(name, annotation)]["calls"])


CASE = Case(
    name="self_time_param_comms",
    situation="record_param_comms holding a nccl:all_reduce scope and its launches (DLRM's shape), a 22.8 ms "
    "record_function scope, and same-name ops with and without a runtime call beside the repeat",
    source="torch's record_param_comms > nccl:* scope nesting (ProcessGroupNCCL, et_replay's public DLRM trace); "
    "torch/autograd/profiler_util.py (_remove_dup_nodes, self_cpu_time_total, _rewrite_name)",
    truth="hand count",
    build=build,
    numbers={
        "summary:top_ops[name=record_param_comms].self_ns": _self_ns("record_param_comms", False),
        "summary:top_ops[name=record_param_comms].annotation": False,
        "summary:top_ops[name=nccl:all_reduce].self_ns": _self_ns("nccl:all_reduce", True),
        "summary:top_ops[name=nccl:all_reduce].annotation": True,
        "summary:top_ops[name=rope_forward].self_ns": _self_ns("rope_forward", True),
        "summary:top_ops[name=rope_forward].annotation": True,
        "summary:top_ops[name=rope_forward].calls": STEPS,
        "summary:top_ops[name=aten::copy_].calls": _calls("aten::copy_"),
        "summary:top_ops[name=aten::copy_].self_ns": _self_ns("aten::copy_", False),
        "summary:top_ops[name=aten::to].calls": _calls("aten::to"),
        "summary:top_ops[name=aten::to].self_ns": _self_ns("aten::to", False),
        "summary:top_ops[name=ProfilerStep*].calls": STEPS,
        "summary:top_ops[name=ProfilerStep*].self_ns": _self_ns("ProfilerStep*", True),
    },
    forbidden_problems=("duplicate_rank",),
    summary_args=("--top", "50"),
)

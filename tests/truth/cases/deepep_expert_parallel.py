"""Expert-parallel decode on two ranks with DeepEP's low-latency kernels: dispatch and combine are
communication (over half the device time), matched across the ranks, not computation."""

from __future__ import annotations

from pathlib import Path

from tests.truth.harness import Case
from tests.truth.kineto import COMM_STREAM, RankTrace

RANKS, STEPS, LAYERS = 2, 3, 4
GEMM_US, DISPATCH_US, COMBINE_US = 40.0, 30.0, 25.0
# DeepEP's kernels as CUPTI names them (templates of deep_ep::internode_ll in csrc/kernels/internode_ll.cu)
DISPATCH = "void deep_ep::internode_ll::dispatch<false, 3, 7168>(void*, float*, int*, long*, void*, int*, int, int)"
COMBINE = "void deep_ep::internode_ll::combine<8, 3, 7168, 9>(void*, void*, int*, void*, void const*, int, int)"
EXPERT_GEMM = "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>(Params)"


def trace(rank: int) -> RankTrace:
    """Per layer: the expert GEMM, then DeepEP's dispatch and combine on the communication stream,
    launched by the ops of deep_ep's Buffer (``low_latency_dispatch`` / ``low_latency_combine``)."""
    t = RankTrace(rank=rank, world_size=RANKS)
    for step in range(STEPS):
        start = step * 2_000.0
        t.step(step, start, 1_900)
        ts = start + 10
        for _ in range(LAYERS):
            ext = t.op("aten::mm", ts, 8)
            t.launch(ext, ts + 2, EXPERT_GEMM, ts + 20, GEMM_US)
            ext = t.op("deep_ep::low_latency_dispatch", ts + 12, 8, cat="user_annotation")
            t.launch(ext, ts + 14, DISPATCH, ts + 20 + GEMM_US, DISPATCH_US, stream=COMM_STREAM)
            ext = t.op("deep_ep::low_latency_combine", ts + 24, 8, cat="user_annotation")
            t.launch(ext, ts + 26, COMBINE, ts + 20 + GEMM_US + DISPATCH_US, COMBINE_US, stream=COMM_STREAM)
            ts += GEMM_US + DISPATCH_US + COMBINE_US + 20
    return t


def build(folder: Path) -> Path:
    for rank in range(RANKS):
        trace(rank).write(folder / "traces")
    return folder / "traces"


# Hand count per rank: dispatch and combine never overlap a GEMM, so all their time is exposed
# communication; they are 55 of every 95 µs of device time.
KERNELS = STEPS * LAYERS
COMM_NS = round(KERNELS * (DISPATCH_US + COMBINE_US) * 1000)
COMPUTE_NS = round(KERNELS * GEMM_US * 1000)

CASE = Case(
    name="deepep_expert_parallel",
    situation="expert-parallel decode with DeepEP's low-latency dispatch/combine kernels (55% of device time)",
    source="DeepEP's kernel templates deep_ep::internode_ll::dispatch/combine (csrc/kernels/internode_ll.cu)",
    truth="hand count",
    build=build,
    numbers={
        "summary:kernel_type_breakdown[rank=0,kernel_type=COMMUNICATION].time_ns": COMM_NS,
        "summary:kernel_type_breakdown[rank=0,kernel_type=COMPUTATION].time_ns": COMPUTE_NS,
        "summary:kernel_type_breakdown[rank=1,kernel_type=COMMUNICATION].time_ns": COMM_NS,
        "summary:matched_collectives.count(collective=alltoall)": 2 * KERNELS,
    },
    forbidden_problems=("clock_skew",),
    summary_args=("--top", "100"),
)

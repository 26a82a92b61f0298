"""A real CUDA trace recorded by others (AlexNet inference, tests/data/import-cuda-alexnet):
kernels, copies and sets as the raw JSON counts them."""

from __future__ import annotations

from tests.truth.harness import Case
from tests.truth.real_traces import DATA, copying, per_name, slices

TRACE = DATA / "import-cuda-alexnet" / "benchmark_result_2869224_1695835535_trace.json.gz"
_EVENTS = slices(TRACE)
_KERNEL_CALLS, _KERNEL_NS = per_name(_EVENTS, "kernel")
_COPY_CALLS, _COPY_NS = per_name(_EVENTS, "gpu_memcpy")
_SET_CALLS, _SET_NS = per_name(_EVENTS, "gpu_memset")
_TOP = max(_KERNEL_NS, key=lambda name: (_KERNEL_NS[name], name))


CASE = Case(
    name="real_cuda_alexnet",
    situation="a real single-GPU trace recorded by others, integer microsecond times",
    source="tests/data/import-cuda-alexnet (torch.profiler on a CUDA host; README names its origin)",
    truth="hand count",
    build=copying(TRACE),
    numbers={
        "summary:memory_operations[kind=Memcpy HtoD].calls": sum(_COPY_CALLS.values()),
        "summary:memory_operations[kind=Memcpy HtoD].total_ns": sum(_COPY_NS.values()),
        "summary:memory_operations[kind=Memset].calls": sum(_SET_CALLS.values()),
        "summary:memory_operations[kind=Memset].total_ns": sum(_SET_NS.values()),
        f"summary:top_kernels[name={_TOP}].calls": _KERNEL_CALLS[_TOP],
        f"summary:top_kernels[name={_TOP}].total_ns": _KERNEL_NS[_TOP],
        "summary:matched_collectives.#": 0,
    },
    forbidden_findings=("comm_not_overlapped", "collective_straggler"),
    forbidden_problems=("clock_skew", "duplicate_rank", "no_device_activity"),
)

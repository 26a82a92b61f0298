"""A real ROCm trace recorded by others (an MI250 training toy, tests/data/import-rocm-mi250):
HIP kernels and copies read as device work, fractional microsecond times."""

from __future__ import annotations

from tests.truth.harness import Case, Near
from tests.truth.real_traces import DATA, copying, per_name, slices

TRACE = DATA / "import-rocm-mi250" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz"
_EVENTS = slices(TRACE)
_KERNEL_CALLS, _KERNEL_NS = per_name(_EVENTS, "kernel")
_COPY_CALLS, _ = per_name(_EVENTS, "gpu_memcpy")
_TOP = max(_KERNEL_NS, key=lambda name: (_KERNEL_NS[name], name))


CASE = Case(
    name="real_rocm_mi250",
    situation="a real ROCm (HIP) trace: device work on an AMD GPU, times with fractions of a microsecond",
    source="tests/data/import-rocm-mi250 (torch.profiler on ROCm 6.2; README names its origin)",
    truth="hand count",
    build=copying(TRACE),
    summary_args=("--top", "200"),  # every kernel, not the 10 longest
    numbers={
        f"summary:top_kernels[name={_TOP}].calls": _KERNEL_CALLS[_TOP],
        # each duration rounded to a whole ns, by the hand count and by kinetoscope alike: at most 1 ns each
        f"summary:top_kernels[name={_TOP}].total_ns": Near(_KERNEL_NS[_TOP], abs_=_KERNEL_CALLS[_TOP]),
        "summary:top_kernels.sum(calls)": sum(_KERNEL_CALLS.values()) + sum(_COPY_CALLS.values()),
    },
    forbidden_findings=("collective_straggler",),
    forbidden_problems=("clock_skew", "duplicate_rank", "no_device_activity"),
)

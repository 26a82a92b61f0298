"""Which layer (framework, runtime, device) a Kineto event belongs to, from its category.

Kineto's ``cat`` says where an activity was recorded: ops and annotations on the host
(framework), runtime and driver API calls (runtime), and work executed on a device. Older
Kineto versions used ``Operator`` / ``Runtime`` / ``Kernel`` / ``Memcpy`` / ``Memset``.
Allocator records (``[memory]`` instants) belong to the runtime layer. A category we do not
know is placed by where it was recorded: on a device row (``pid`` is a device index) it is
device work, otherwise framework.
"""

from __future__ import annotations

FRAMEWORK = "framework"
RUNTIME = "runtime"
DEVICE = "device"
LAYER_CODES = {FRAMEWORK: 0, RUNTIME: 1, DEVICE: 2}
LAYER_NAMES = (FRAMEWORK, RUNTIME, DEVICE)

MEMORY_EVENT = "[memory]"

_BY_CATEGORY = {
    # framework: host-side ops, annotations, Python frames
    "cpu_op": FRAMEWORK,
    "user_annotation": FRAMEWORK,
    "python_function": FRAMEWORK,
    "cpu_instant_event": FRAMEWORK,
    "operator": FRAMEWORK,
    "hpu_op": FRAMEWORK,
    # runtime: API and driver calls, synchronizations, collectives issued from the host
    "cuda_runtime": RUNTIME,
    "cuda_driver": RUNTIME,
    "cuda_sync": RUNTIME,
    "cuda_event": RUNTIME,
    "runtime": RUNTIME,
    "mtia_runtime": RUNTIME,
    "xpu_runtime": RUNTIME,
    "xpu_driver": RUNTIME,
    "xpu_sync": RUNTIME,
    "privateuse1_runtime": RUNTIME,
    "privateuse1_driver": RUNTIME,
    "glow_runtime": RUNTIME,
    "collective_comm": RUNTIME,
    "external_correlation": RUNTIME,
    "overhead": RUNTIME,
    # device: executions
    "kernel": DEVICE,
    "gpu_memcpy": DEVICE,
    "gpu_memset": DEVICE,
    "gpu_user_annotation": DEVICE,
    "memcpy": DEVICE,
    "memset": DEVICE,
    "mtia_ccp_events": DEVICE,
    "mtia_insight": DEVICE,
    "cuda_profiler_range": DEVICE,
    "xpu_scope_profiler": DEVICE,
    "hardware_counters": DEVICE,
}

# Device categories whose rows are device work that occupies the device (for busy time).
KERNEL_CATEGORIES = frozenset({"kernel", "Kernel", "mtia_ccp_events"})
MEMCPY_CATEGORIES = frozenset({"gpu_memcpy", "Memcpy"})
MEMSET_CATEGORIES = frozenset({"gpu_memset", "Memset"})

# Flow categories whose ids are correlation ids (runtime call -> device work).
CORRELATION_FLOW_CATEGORIES = frozenset({"ac2g", "async_cpu_to_gpu", "async", "async_gpu"})
FWD_BWD_FLOW_CATEGORY = "fwdbwd"


def layer_of(category: str) -> str | None:
    """The layer of a category; None when the category is unknown (the caller places it and warns)."""
    return _BY_CATEGORY.get(category) or _BY_CATEGORY.get(category.lower())

"""Which layer (framework, runtime, device) a Kineto event belongs to, from its category.

Kineto's ``cat`` says where an activity was recorded: ops and annotations on the host
(framework), runtime and driver API calls (runtime), and work executed on a device. Older
Kineto versions used ``Operator`` / ``Runtime`` / ``Kernel`` / ``Memcpy`` / ``Memset``. The
table is the one the trace import uses to split ``ntrace.pb`` from the device traces, so the
dataset and the session's packet files agree on every event's layer.
Allocator records (``[memory]`` instants) and host collectives (``gloo:*`` annotations) belong
to the runtime layer. A category we do not
know is placed by where it was recorded: on a device row (``pid`` is a device index) it is
device work, otherwise framework.
"""

from __future__ import annotations

from kinetoscope.format import kineto_events

FRAMEWORK = "framework"
RUNTIME = kineto_events.RUNTIME
DEVICE = kineto_events.DEVICE
LAYER_CODES = {FRAMEWORK: 0, RUNTIME: 1, DEVICE: 2}
LAYER_NAMES = (FRAMEWORK, RUNTIME, DEVICE)

MEMORY_EVENT = kineto_events.MEMORY_EVENT

# Categories the trace import (format.kineto_events) places, plus a few it leaves to us.
_BY_CATEGORY: dict[str, str] = {
    **{category: kind[0] for category, kind in kineto_events.CATEGORY_KINDS.items()},
    **dict.fromkeys(kineto_events.FRAMEWORK_CATEGORIES, FRAMEWORK),
    "hpu_op": FRAMEWORK,
    "cuda_event": RUNTIME,
    "xpu_driver": RUNTIME,
    "xpu_sync": RUNTIME,
    "collective_comm": RUNTIME,
    "xpu_scope_profiler": DEVICE,
    "hardware_counters": DEVICE,
}

# Device categories whose rows are device work that occupies the device (for busy time).
KERNEL_CATEGORIES = frozenset({"kernel", "Kernel", "mtia_ccp_events"})
MEMCPY_CATEGORIES = frozenset({"gpu_memcpy", "Memcpy"})
MEMSET_CATEGORIES = frozenset({"gpu_memset", "Memset"})

# Flow categories whose ids are correlation ids (runtime call -> device work).
CORRELATION_FLOW_CATEGORIES = kineto_events.LAUNCH_FLOW_CATEGORIES
FWD_BWD_FLOW_CATEGORY = "fwdbwd"


def is_host_collective(name: str) -> bool:
    """A collective the host runs itself (``gloo:all_reduce``, ``nccl:all_reduce`` annotations): the
    runtime layer, as in the system trace."""
    return name.startswith(kineto_events.COLLECTIVE_PREFIXES)


def layer_of(category: str) -> str | None:
    """The layer of a category; None when the category is unknown (the caller places it and warns)."""
    return _BY_CATEGORY.get(category)

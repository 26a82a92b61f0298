"""Category and name -> (layer, kind): the one table every sink of a Kineto event reads.

Kineto has renamed its categories over the years (``Runtime`` -> ``cuda_runtime``, ``Kernel``
-> ``kernel``, ``async`` -> ``ac2g``); the table accepts every spelling found in real traces.

* layer: ``framework`` (ops, Python frames, annotations: they stay in ``trace.json``),
  ``runtime`` (API and driver calls, synchronizations, allocator events, host collectives:
  the system trace) or ``device`` (work executed on a device: the device traces).
* kind: what the event is within its layer (``KINDS``). Device annotations (``gpu_user_annotation``)
  and markers label time and are never counted as work. ``COLLECTIVE`` is a host row only (a
  ``gloo:``/``nccl:`` scope); a collective kernel is a ``KERNEL`` whose ``collective`` is set.
"""

from __future__ import annotations

FRAMEWORK, RUNTIME, DEVICE = "framework", "runtime", "device"
LAYERS = (FRAMEWORK, RUNTIME, DEVICE)
LAYER_CODES = {name: code for code, name in enumerate(LAYERS)}

KERNEL, MEMCPY, MEMSET, DEVICE_ANNOTATION = "kernel", "memcpy", "memset", "device_annotation"
RUNTIME_CALL, DRIVER, SYNC, ALLOCATION, COLLECTIVE = "runtime", "driver", "sync", "allocation", "collective"
OP, PYTHON, USER_ANNOTATION, MARKER = "op", "python", "user_annotation", "marker"
KINDS = (
    KERNEL,
    MEMCPY,
    MEMSET,
    DEVICE_ANNOTATION,
    RUNTIME_CALL,
    DRIVER,
    SYNC,
    OP,
    PYTHON,
    USER_ANNOTATION,
    ALLOCATION,
    COLLECTIVE,
    MARKER,
)
KIND_CODES = {name: code for code, name in enumerate(KINDS)}
# Kinds whose args ingest reads into columns of their own (an allocator instant's address, size,
# device and totals: the counters and the allocations' join), so an analysis never reads their text.
ARGS_IN_COLUMNS_KINDS = (ALLOCATION,)
# Device kinds that occupy the device (busy time); annotations and markers only label it.
DEVICE_WORK_KINDS = (KERNEL, MEMCPY, MEMSET)
MEMORY_WORK_KINDS = (MEMCPY, MEMSET)
# Host kinds that make the op tree (torch's ``key_averages``): self time subtracts these, never Python frames.
# Host collectives (``nccl:all_reduce`` / ``gloo:all_reduce`` scopes, ``record_function`` scopes to torch) belong
# to it: ``record_param_comms`` loses their time, and they lose that of the calls inside them.
OP_TREE_KINDS = (OP, USER_ANNOTATION, RUNTIME_CALL, DRIVER, SYNC, COLLECTIVE)
# Kinds an event's nearest framework op (``op_id``) may be.
OP_KINDS = (OP, USER_ANNOTATION)
# Host rows ``key_averages`` lists as ops or annotations, the rows ``top_ops`` ranks; all but ``OP`` are
# annotations (``record_function`` scopes, host collectives) and marked as such.
RANKED_KINDS = (OP, USER_ANNOTATION, COLLECTIVE)
ANNOTATION_KINDS = (USER_ANNOTATION, COLLECTIVE)

Rule = tuple[str, str]
CATEGORIES: dict[str, Rule] = {
    **dict.fromkeys(("kernel", "Kernel", "mtia_ccp_events"), (DEVICE, KERNEL)),
    **dict.fromkeys(("gpu_memcpy", "Memcpy"), (DEVICE, MEMCPY)),
    **dict.fromkeys(("gpu_memset", "Memset"), (DEVICE, MEMSET)),
    "Ascend Hardware": (DEVICE, KERNEL),  # an NPU's tasks, by their process (``device_processes``)
    "gpu_user_annotation": (DEVICE, DEVICE_ANNOTATION),
    **dict.fromkeys(("cuda_profiler_range", "xpu_scope_profiler", "hardware_counters"), (DEVICE, MARKER)),
    **dict.fromkeys(
        ("cuda_runtime", "Runtime", "mtia_runtime", "xpu_runtime", "privateuse1_runtime", "glow_runtime", "cuda_event"),
        (RUNTIME, RUNTIME_CALL),
    ),
    **dict.fromkeys(("cuda_driver", "privateuse1_driver", "xpu_driver"), (RUNTIME, DRIVER)),
    **dict.fromkeys(("cuda_sync", "xpu_sync"), (RUNTIME, SYNC)),
    "collective_comm": (RUNTIME, COLLECTIVE),
    **dict.fromkeys(("cpu_op", "Operator", "hpu_op"), (FRAMEWORK, OP)),
    "user_annotation": (FRAMEWORK, USER_ANNOTATION),
    **dict.fromkeys(("python_function", "Python"), (FRAMEWORK, PYTHON)),
    **dict.fromkeys(
        ("Trace", "cpu_instant_event", "overhead", "Overhead", "external_correlation", "mtia_insight"),
        (FRAMEWORK, MARKER),
    ),
}
# Flow categories: a host call to the device execution it caused (ids are correlation ids), and forward -> backward.
LAUNCH_FLOW_CATEGORIES = frozenset({"ac2g", "async", "async_cpu_to_gpu", "async_gpu"})
FWD_BWD_FLOW_CATEGORY = "fwdbwd"
FLOW_CATEGORIES = LAUNCH_FLOW_CATEGORIES | {FWD_BWD_FLOW_CATEGORY}
FLOW_PHASES = ("s", "f", "t")

# Processes whose events are an accelerator's device work but carry no category of the table above:
# torch_npu's ``trace_view.json`` writes an NPU's tasks on a process named "Ascend Hardware" (no
# ``cat``; tid: the stream). ``device_processes`` places them; those read before their process's
# name are not placed, and readers count them and say so.
UNPLACED_DEVICE_PROCESSES = ("Ascend Hardware",)
PROCESS_NAME = "process_name"  # the metadata event naming a process (its ``args.name``)

MEMORY_EVENT = "[memory]"
# The profiler's step markers, one framework annotation per step: ``ProfilerStep#N``.
STEP_PREFIX = "ProfilerStep#"
# Host collectives recorded as annotations (``gloo:all_reduce``): runtime work whatever their category.
GLOO_PREFIX = "gloo:"  # gloo's host collectives: the CPU ranks' collectives
COLLECTIVE_PREFIXES = (GLOO_PREFIX, "nccl:", "rccl:", "xccl:", "mpi:", "ucc:")
COMMS_METADATA_OP = "record_param_comms"
CALLER_PREFIX = "c10d::"
UNKNOWN: Rule = (FRAMEWORK, MARKER)  # an unknown category: kept as a framework marker, and reported


def rule(category: object, name: object, ph: object) -> Rule | None:
    """(layer, kind) of one event; None for metadata, counters, flows and unknown categories.

    Allocator records (``[memory]`` instants) and host collectives (``gloo:*``) recorded on the host
    (framework or no category) belong to the runtime layer.
    """
    if ph in FLOW_PHASES or ph in ("M", "C"):
        return None
    found = CATEGORIES.get(category) if isinstance(category, str) else None
    if isinstance(name, str) and (found is None or found[0] == FRAMEWORK):
        if name == MEMORY_EVENT and ph in ("i", "I"):
            return (RUNTIME, ALLOCATION)
        if ph == "X" and name.startswith(COLLECTIVE_PREFIXES):
            return (RUNTIME, COLLECTIVE)
    return found


def is_unknown_category(category: object) -> bool:
    """Whether ``category`` is a string none of the tables here knows."""
    return isinstance(category, str) and category not in CATEGORIES and category not in FLOW_CATEGORIES


def is_host_collective(name: str) -> bool:
    """A collective the host runs itself (``gloo:all_reduce``, ``nccl:all_reduce`` annotations)."""
    return name.startswith(COLLECTIVE_PREFIXES)

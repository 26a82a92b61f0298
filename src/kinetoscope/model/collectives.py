"""Which events are collective communication, and which collective.

Three sources, in order of trust: Kineto's ``Collective name`` metadata (copied from
``record_param_comms`` onto the kernels it launched); the name of a NCCL/RCCL kernel or of a
host collective annotation (``ncclDevKernel_AllReduce_...``, ``gloo:all_reduce``); and for
kernels of libraries that Kineto does not describe (symmetric-memory and custom all-reduce
kernels such as ``multimem_all_reduce_kernel`` or vLLM's ``cross_device_reduce_1stage``),
the op that launched them (``symm_mem::multimem_all_reduce_``, ``vllm::all_reduce``).
Collectives are named without separators and in lower case (``allreduce``, ``alltoall``).
"""

from __future__ import annotations

import re

from kinetoscope.model import kinds
from kinetoscope.model.scalars import to_int

_NCCL_KERNEL_RE = re.compile(r"^(?:nccl|rccl)(?:Dev)?Kernel_([A-Za-z]+)")
# Kernels of collective libraries outside NCCL/RCCL, by name.
_OTHER_KERNEL_RE = re.compile(
    r"(multimem_(?:all_reduce|all_gather|reduce_scatter)|one_shot_all_reduce|two_shot_all_reduce"
    r"|cross_device_reduce|custom_all_reduce|all_reduce_kernel)",
    re.IGNORECASE,
)
# Ops that launch collective kernels: their collective is in their name after the namespace.
_OP_NAMESPACES = ("c10d::", "symm_mem::", "vllm::", "_c10d_functional::", "c10d_functional::", "_dtensor::")
_OP_COLLECTIVE_RE = re.compile(
    r"(all_reduce|allreduce|all_gather|allgather|reduce_scatter|all_to_all|alltoall|broadcast|"
    r"send|recv|barrier|reduce|gather|scatter)",
    re.IGNORECASE,
)
# Ops whose name says they carry collective metadata.
METADATA_OPS = (kinds.COMMS_METADATA_OP, *_OP_NAMESPACES, *kinds.COLLECTIVE_PREFIXES)


def normalised(name: str) -> str:
    """``all_reduce``, ``AllReduce`` -> ``allreduce``."""
    return name.replace("_", "").lower()


def spelled(name: str) -> str:
    """The collective a kernel or host annotation name spells; "" for other names."""
    if (match := _NCCL_KERNEL_RE.match(name)) is not None:
        return match.group(1).lower()
    if kinds.is_host_collective(name):
        return normalised(name.split(":", 1)[1])
    if (match := _OTHER_KERNEL_RE.search(name)) is not None:
        found = match.group(1).lower()
        return "allgather" if "gather" in found else "reducescatter" if "scatter" in found else "allreduce"
    return ""


def of_op(name: str) -> str:
    """The collective a launching op performs (``symm_mem::multimem_all_reduce_`` -> ``allreduce``); "" if none."""
    if not name.startswith(_OP_NAMESPACES):
        return ""
    return normalised(_op_collective(name.split("::", 1)[1]))


def _op_collective(text: str) -> str:
    match = _OP_COLLECTIVE_RE.search(text)
    return match.group(1) if match else ""


# Canonical collectives, most specific first: ``_allgather_base`` and ``all_gather_into_tensor``
# are ``allgather``, ``all_to_allv`` and ``alltoall_base`` ``alltoall``.
_CANONICAL = ("allreduce", "reducescatter", "allgather", "alltoall", "broadcast", "sendrecv", "barrier",
              "reduce", "gather", "scatter", "send", "recv")  # fmt: skip


def canonical(name: str) -> str:
    """The collective a ``Collective name`` value or ``collective`` column value stands for, in the
    spelling above (``all_to_allv`` -> ``alltoall``); the normalised name itself when none fits."""
    flat = normalised(name).strip()
    return next((known for known in _CANONICAL if known in flat), flat)


# Bytes per element of the ``dtype`` Kineto records (c10 ScalarType names).
DTYPE_BYTES = {
    "Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Long": 8, "Int": 4, "Short": 2, "Char": 1,
    "Byte": 1, "Bool": 1, "ComplexHalf": 4, "ComplexFloat": 8, "ComplexDouble": 16, "UInt16": 2,
    "UInt32": 4, "UInt64": 8, "Float8_e4m3fn": 1, "Float8_e5m2": 1, "Float8_e4m3fnuz": 1,
    "Float8_e5m2fnuz": 1, "Float8_e8m0fnu": 1, "QInt8": 1, "QUInt8": 1, "QInt32": 4,
}  # fmt: skip

# Collectives whose ranks all finish at about the same moment (a send or a broadcast need not):
# their ends compare clocks across ranks.
ENDS_TOGETHER = frozenset({"allreduce", "allgather", "reducescatter", "barrier", "alltoall"})


def size_bytes(in_nelems: object, out_nelems: object, dtype: object) -> int:
    """A collective's message size: the larger of ``In msg nelems`` and ``Out msg nelems`` times the
    size of its ``dtype`` (-1 where either is unknown), as ``collective_meta`` reads it in columns."""
    counts = [n for n in (to_int(in_nelems), to_int(out_nelems)) if n >= 0]
    element = DTYPE_BYTES.get(dtype, -1) if isinstance(dtype, str) else -1
    return max(counts) * element if counts and element > 0 else -1


def bus_factor(collective: str, ranks: int) -> float | None:
    """nccl-tests' bus bandwidth factor of ``collective`` over ``ranks`` (None: no formula)."""
    if ranks < 1:
        return None
    if collective == "allreduce":
        return 2.0 * (ranks - 1) / ranks
    if collective in ("allgather", "reducescatter", "alltoall"):
        return (ranks - 1) / ranks
    if collective in ("broadcast", "reduce", "send", "recv", "sendrecv"):
        return 1.0
    return None

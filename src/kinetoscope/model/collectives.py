"""Which events are collective communication, and which collective.

Three sources, in order of trust: Kineto's ``Collective name`` metadata (copied from
``record_param_comms`` onto the kernels it launched); the name of a NCCL/RCCL kernel or of a
host collective annotation (``ncclDevKernel_AllReduce_...``, ``gloo:all_reduce``); and for
kernels of libraries that Kineto does not describe, a table of name patterns
(``LIBRARY_KERNELS``: DeepEP's dispatch and combine, NVSHMEM's on-stream collectives, MSCCL++,
MoRI, symmetric-memory and custom all-reduce and all-to-all kernels such as
``multimem_all_reduce_kernel`` or vLLM's ``cross_device_reduce_1stage``), else the op that
launched them (``symm_mem::multimem_all_reduce_``, ``vllm::all_reduce``). Collectives are named
without separators and in lower case (``allreduce``, ``alltoall``).

The ``collective`` column of a dataset holds these built-in rules' decision; ``RULES_VERSION``
names them, and a dataset built under other rules is ingested again. A user's own patterns
(the ``communication`` category of ``--categories``) apply when a dataset or a trace is read
(``of_user_kernel``): a kernel they match that the built-in rules left without a collective gets
one, so it is communication and is matched across ranks like NCCL's, and changing them needs no
new ingest.
"""

from __future__ import annotations

import functools
import re

from kinetoscope.model import kinds
from kinetoscope.model.scalars import to_int

# The version of the built-in rules a dataset's ``collective`` column was decided by.
RULES_VERSION = 2  # 2: LIBRARY_KERNELS (DeepEP, NVSHMEM, MSCCL++, MoRI, all-to-all kernels)
_NCCL_KERNEL_RE = re.compile(r"^(?:nccl|rccl)(?:Dev)?Kernel_([A-Za-z]+)")
# Kernels of communication libraries outside NCCL/RCCL, by name, as CUPTI writes them (demangled):
# (library, pattern searched in the name, the collective; "" when the name says it, by FROM_NAME).
LIBRARY_KERNELS: tuple[tuple[str, str, str], ...] = (
    ("DeepEP", r"\bdeep_ep::(?:internode_ll|internode|intranode)::\w*(?:dispatch|combine)", "alltoall"),
    ("DeepEP", r"\bdeep_ep::(?:internode|intranode)::barrier", "barrier"),
    ("NVSHMEM", r"\w*_on_stream_kernel\b", ""),
    ("NVSHMEM", r"\bnvshmemi?x?_\w*(?:alltoall|barrier|broadcast|fcollect|reduce|sync_all)", ""),
    ("MSCCL++", r"\bmscclpp::|\bmscclpp\w*kernel|\bmscclKernel_", ""),
    ("MoRI", r"\bmori::moe::Ep(?:Dispatch|Combine)", "alltoall"),
    ("symmetric memory", r"multimem_(?:all_reduce|all_gather|reduce_scatter)", ""),
    ("custom all-reduce", r"one_shot_all_reduce|two_shot_all_reduce|cross_device_reduce", "allreduce"),
    ("custom all-reduce", r"custom_all_reduce", "allreduce"),
    ("custom all-reduce", r"all_reduce_kernel", "allreduce"),
    ("custom all-to-all", r"(?:all_to_all|alltoall|all2all)\w*kernel", "alltoall"),
)
# A collective spelled in a library kernel's name, most specific first.
FROM_NAME: tuple[tuple[str, str], ...] = (
    (r"reduce_?scatter", "reducescatter"),
    (r"all_?gather|fcollect", "allgather"),
    (r"all_?to_?all|all2all|dispatch|combine", "alltoall"),
    (r"all_?reduce|rdxn|reduce", "allreduce"),
    (r"broadcast|bcast", "broadcast"),
    (r"barrier|sync_all", "barrier"),
)
_LIBRARY_RES = tuple((re.compile(pattern, re.IGNORECASE), collective) for _, pattern, collective in LIBRARY_KERNELS)
_FROM_NAME_RES = tuple((re.compile(pattern, re.IGNORECASE), collective) for pattern, collective in FROM_NAME)
USER_CATEGORY = "communication"  # the ``--categories`` category whose patterns mark communication
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


@functools.lru_cache(maxsize=4096)
def spelled(name: str) -> str:
    """The collective a kernel or host annotation name spells; "" for other names (remembered by
    name: a trace repeats a few thousand kernel names, and the library patterns are many)."""
    if (match := _NCCL_KERNEL_RE.match(name)) is not None:
        return match.group(1).lower()
    if kinds.is_host_collective(name):
        return normalised(name.split(":", 1)[1])
    return library_kernel(name)


def library_kernel(name: str) -> str:
    """The collective of a kernel of a library in ``LIBRARY_KERNELS``; "" for other names."""
    for pattern, collective in _LIBRARY_RES:
        if pattern.search(name) is not None:
            return collective or from_name(name) or "sendrecv"
    return ""


def from_name(name: str) -> str:
    """The collective a kernel's name spells (``rdxn_float_sum_on_stream_kernel`` -> ``allreduce``); "" if none."""
    return next((collective for pattern, collective in _FROM_NAME_RES if pattern.search(name)), "")


def user_patterns(rules: tuple[tuple[str, tuple[str, ...]], ...]) -> tuple[str, ...]:
    """The patterns a user's category rules (``--categories``) give the ``communication`` category."""
    return tuple(pattern for category, patterns in rules if category == USER_CATEGORY for pattern in patterns)


def of_user_kernel(name: str, patterns: tuple[str, ...]) -> str:
    """The collective of a kernel the user's ``communication`` patterns match (searched anywhere in
    the name, case-insensitive), as of a library kernel that names none: the collective its name
    spells, else ``sendrecv``; "" where no pattern matches (or there are none). The built-in rules
    come first: a row whose collective they decided keeps it."""
    matcher = _user_matcher(patterns)
    if matcher is None or matcher.search(name) is None:
        return ""
    return from_name(name) or "sendrecv"


def of_user_kernels(names: list[str], patterns: tuple[str, ...]) -> list[str]:
    """``of_user_kernel`` for each of ``names`` (the column form runs it over a column's distinct names)."""
    return [of_user_kernel(name, patterns) for name in names] if patterns else [""] * len(names)


@functools.lru_cache(maxsize=8)
def _user_matcher(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns), re.IGNORECASE)


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

"""Which frames of a memory snapshot's stack name where an allocation came from.

A snapshot recorded with C++ frames (``torch.cuda.memory._record_memory_history(stacks="all")``)
starts every stack with the unwinder and the allocator: ``torch::unwind::unwind()``,
``torch::CapturedTraceback::gather(...)``, ``c10::cuda::CUDACachingAllocator::...::malloc(...)``.
Named by its innermost frame, every stack would read ``torch::unwind::unwind()``. torch's own
viewer (``torch/cuda/_memory_viz.py``, ``_frame_filter``) drops the unwinder and interpreter
frames everywhere; the allocator's frames are dropped here too while they lead the stack, so a
stack is named by the first frame that is neither.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

# torch/cuda/_memory_viz.py _frame_filter: frames omitted wherever they are.
OMIT_FUNCTIONS = (
    "unwind::unwind",
    "CapturedTraceback::gather",
    "gather_with_cpp",
    "_start",
    "__libc_start_main",
    "PyEval_",
    "PyObject_",
    "PyFunction_",
)
OMIT_FILENAMES = (
    "core/boxing",
    "/Register",
    "/Redispatch",
    "pythonrun.c",
    "Modules/main.c",
    "Objects/call.c",
    "Objects/methodobject.c",
    "pycore_ceval.h",
    "ceval.c",
    "cpython/abstract.h",
)
# The allocator's own frames: skipped while they are the innermost ones.
ALLOCATOR_FUNCTIONS = ("CachingAllocator", "c10::cuda::CUDAAllocator", "c10::alloc_cpu", "c10::Allocator")


def _omitted(frame: dict[str, Any]) -> bool:
    name, filename = str(frame.get("name", "")), str(frame.get("filename", ""))
    return any(o in name for o in OMIT_FUNCTIONS) or any(o in filename for o in OMIT_FILENAMES)


def _allocator(frame: dict[str, Any]) -> bool:
    return any(a in str(frame.get("name", "")) for a in ALLOCATOR_FUNCTIONS)


def meaningful(frames: Sequence[Any]) -> list[dict[str, Any]]:
    """``frames`` (innermost first, as snapshots list them) without the unwinder's, the interpreter's and,
    while they lead, the allocator's frames. A stack of nothing else is kept as it was."""
    kept = [f for f in frames if isinstance(f, dict) and not _omitted(f)]
    start = 0
    while start < len(kept) and _allocator(kept[start]):
        start += 1
    found = kept[start:]
    return found if found else [f for f in frames if isinstance(f, dict)]

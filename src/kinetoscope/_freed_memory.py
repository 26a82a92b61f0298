"""Memory a step freed handed back to the system at once (glibc ``malloc_trim``).

numpy arrays under glibc's mmap threshold (128 KiB at first: one ingest batch's column of 10,000
events is 80 KiB) are carved out of the heap, and a heap only shrinks from its top: once a step
frees thousands of such arrays (ingest joins each key's batches into one column), their pages
stay resident behind whatever was allocated after them. ``malloc_trim(0)`` returns every free
page of every arena. Standard library only.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """The C library's ``malloc_trim``, looked up among the symbols loaded (None: not glibc)."""
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
    return trim


def release_freed_memory() -> bool:
    """Return the free pages of the C heap to the system; False where there is no ``malloc_trim``."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False

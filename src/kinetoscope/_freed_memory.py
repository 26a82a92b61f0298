"""Memory a step freed handed back to the system at once (glibc ``malloc_trim``).

numpy arrays under glibc's mmap threshold (128 KiB at first: one ingest batch's column of 10,000
events is 80 KiB) are carved out of the heap, and a heap only shrinks from its top: once a step
frees thousands of such arrays (ingest joins each key's batches into one column), their pages
stay resident behind whatever was allocated after them. ``malloc_trim(0)`` returns every free
page of every arena. ``map_large_blocks`` fixes the mmap threshold instead, so that every block
above it (a whole-session column, a step's temporary copy of one) is mapped on its own and
unmapped when freed. Standard library only.
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


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc malloc.h
MAPPED_BLOCK_BYTES = 1 << 20


@functools.cache
def mallopt_function() -> Callable[[int, int], int] | None:
    """The C library's ``mallopt``, looked up among the symbols the process has loaded (None: no
    such function). Not through ``ctypes.util.find_library``, whose import (subprocess, tempfile,
    random) and library search cost more than the rest of summary's own start-up."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError, TypeError):
        return None
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return mallopt


def map_large_blocks(threshold_bytes: int = MAPPED_BLOCK_BYTES) -> bool:
    """Blocks of ``threshold_bytes`` and more mapped on their own from now on, and so given back the
    moment they are freed (glibc raises its threshold as mapped blocks are freed, up to 32 MiB, after
    which a freed column of a few million rows stays resident in the heap until trimmed). Freed memory
    at the heap's top beyond twice the threshold is given back too. False where there is no ``mallopt``."""
    mallopt = mallopt_function()
    if mallopt is None:
        return False
    settings = ((M_MMAP_THRESHOLD, threshold_bytes), (M_TRIM_THRESHOLD, 2 * threshold_bytes))
    return all([bool(mallopt(option, value)) for option, value in settings])


def release_freed_memory() -> bool:
    """Return the free pages of the C heap to the system; False where there is no ``malloc_trim``."""
    trim = _malloc_trim()
    return bool(trim(0)) if trim is not None else False

"""Fewer glibc malloc arenas for the explorer's threads.

glibc gives each thread that allocates its own arena (up to eight per core), and memory one
arena frees is not reused by the others: with Arrow's buffers allocated from several threads
(Parquet reading, summary's analysis threads) the process holds freed pages of every arena at
once. Two arenas keep the threads from waiting on one lock and hold the peak near what one
thread needs (1.14 M events: 788 -> 634 MiB peak, the same time)."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools

M_ARENA_MAX = -8  # glibc malloc.h
ARENAS = 2


@functools.cache
def limit_arenas(arenas: int = ARENAS) -> bool:
    """Cap the arenas glibc creates from now on (those already made stay); False where the C
    library is not glibc or refuses (nothing changes then)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return False
    try:
        mallopt = ctypes.CDLL(name).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_ARENA_MAX, arenas))

"""glibc malloc settings for the explorer's commands that hold large Arrow and numpy buffers.

- **One arena.** glibc gives each thread that allocates its own arena (up to eight per
  core), and memory one arena frees is not reused by the others: with Arrow's buffers allocated
  from several threads (Parquet reading, summary's analysis threads) the process holds freed
  pages of every arena at once. Two arenas instead of glibc's default held the peak near what
  one thread needs (1.14 M events: 788 -> 634 MiB peak, the same time); one arena lets the
  analysis threads reuse each other's freed columns too (3 M tiny events, two threads: 1,177-1,251
  -> 1,109-1,130 MB peak, the same CPU time: the threads allocate few, large blocks, so they
  seldom wait on its lock).
- **Blocks under 32 MiB kept.** Above the mmap threshold (128 KiB, raised as blocks are freed, at
  most 32 MiB) glibc maps each block on its own and unmaps it when freed, so that every column
  the next step allocates is new pages, each faulted in and zeroed by the kernel. Analyses
  allocate and free columns of millions of rows one after another: with blocks taken from the
  heap and freed memory kept (trimmed above 1 GiB), 10 M events over 8 ranks spent 4 instead of
  14 s in the kernel (measured with blocks up to 256 MiB from the heap; their ranks' columns, 1.25 M
  rows, are under 32 MiB). The threshold is fixed at 32 MiB, not higher: a block of a whole large
  rank's column (4 M rows of 64 bits and more) is mapped and handed back as it is freed, since in
  the heap its freed pages stay resident behind smaller blocks allocated after it (10 M tiny
  events of one rank: 2,480-2,580 MB peak with blocks up to 256 MiB from the heap, 2,020-2,180
  with 32 MiB, for 2-3 s more in the kernel).
- **Arrow's memory from malloc, all of it.** ``pa.set_memory_pool`` (``report.runner``) changes the
  pool of pyarrow's own calls only: the C++ code under them (Parquet's readers and writers,
  compute kernels) keeps taking Arrow's default pool, mimalloc, which holds on to the pages it
  freed. ``arrow_system_pool`` makes malloc Arrow's default for the whole process, before
  pyarrow is loaded: the one screen of a raw 54 MB trace (import, ingest, analyses) peaks about
  15 MiB lower, in the same CPU time (docs/peers.md).
"""

from __future__ import annotations

import functools
import os
import sys

from kinetoscope._freed_memory import M_MMAP_THRESHOLD, M_TRIM_THRESHOLD, mallopt_function

M_ARENA_MAX = -8  # glibc malloc.h
ARENAS = 1
MMAP_THRESHOLD_BYTES = 32 << 20
TRIM_THRESHOLD_BYTES = 1 << 30
ARROW_POOL_ENV = "ARROW_DEFAULT_MEMORY_POOL"  # read by Arrow's C++ library once, at its first allocation


@functools.cache
def tune_malloc(arenas: int = ARENAS) -> bool:
    """Cap the arenas glibc creates from now on (those already made stay) and keep large freed
    blocks for reuse; False where the C library is not glibc or refuses (nothing changes then)."""
    mallopt = mallopt_function()
    if mallopt is None:
        return False
    settings = (
        (M_ARENA_MAX, arenas),
        (M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES),
        (M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES),
    )
    return all([bool(mallopt(option, value)) for option, value in settings])


def arrow_system_pool() -> bool:
    """Make the C library's malloc Arrow's default memory pool for this process, C++ included,
    where pyarrow is not loaded yet (True: done, or already so; False: pyarrow chose before, or
    the user's ``ARROW_DEFAULT_MEMORY_POOL`` names another pool, which is kept). The environment
    is left as it was, so the processes started later choose their own."""
    asked = os.environ.get(ARROW_POOL_ENV)
    if asked is not None and asked != "system":
        return False
    if "pyarrow" in sys.modules:
        import pyarrow as pa

        return bool(pa.default_memory_pool().backend_name == "system")
    os.environ[ARROW_POOL_ENV] = "system"
    try:
        import pyarrow as pa

        chosen = pa.default_memory_pool().backend_name  # the first call fixes the default
    finally:
        if asked is None:
            del os.environ[ARROW_POOL_ENV]
    return bool(chosen == "system")

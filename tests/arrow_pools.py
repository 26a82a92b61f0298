"""Arrow's allocations counted by a pool of their own, for tests that bound what a step allocates."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pyarrow as pa

_COUNTING: list[pa.MemoryPool] = []  # kept to the end: a buffer made in the block may outlive it


@contextlib.contextmanager
def arrow_counted() -> Iterator[pa.MemoryPool]:
    """Arrow's allocations in the block counted by a pool of their own (the one before, after)."""
    before = pa.default_memory_pool()
    pool = pa.proxy_memory_pool(pa.system_memory_pool())
    _COUNTING.append(pool)
    pa.set_memory_pool(pool)
    try:
        yield pool
    finally:
        pa.set_memory_pool(before)

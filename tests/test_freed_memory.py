"""Freed heap pages handed back to the system (``kinetoscope._freed_memory``)."""

from __future__ import annotations

import ctypes
import sys

import numpy as np
import psutil
import pytest

from kinetoscope._freed_memory import release_freed_memory


def _glibc() -> bool:
    try:
        ctypes.CDLL(None).malloc_trim  # noqa: B018 - only whether the symbol is there
    except (OSError, AttributeError):
        return False
    return True


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _glibc(), reason="glibc's malloc_trim only")
def test_the_pages_of_freed_small_arrays_go_back() -> None:
    # GIVEN 240 MB of 80 KB arrays (an ingest batch's key columns), every other one freed: the holes
    # lie between live blocks, where the heap cannot shrink by itself
    arrays = [np.ones(10_000) for _ in range(3_000)]
    del arrays[::2]
    before = psutil.Process().memory_info().rss
    # WHEN the freed pages are handed back
    release_freed_memory()
    # THEN the resident memory falls by most of the 120 MB freed
    after = psutil.Process().memory_info().rss
    assert before - after > 80 << 20
    assert len(arrays) == 1_500

"""Freed heap pages handed back to the system (``kinetoscope._freed_memory``)."""

from __future__ import annotations

import ctypes
import subprocess
import sys

import numpy as np
import psutil
import pytest

from kinetoscope._freed_memory import release_freed_memory

from .conftest import PYTHON, python_env


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


_MAPPED_BLOCKS_GO_BACK = """
import numpy as np, psutil
from kinetoscope._freed_memory import map_large_blocks
block = np.ones(3_000_000)
del block
assert map_large_blocks()
arrays = [np.ones(500_000) for _ in range(60)]
before = psutil.Process().memory_info().rss
del arrays[::2]
print(before - psutil.Process().memory_info().rss, len(arrays))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or not _glibc(), reason="glibc's mallopt only")
def test_blocks_above_the_threshold_go_back_as_they_are_freed() -> None:
    # GIVEN, in a process of its own (glibc's settings are the process's: the test run's stay as they
    # are), a freed 24 MB block (glibc then takes blocks up to 24 MB from the heap), then large blocks
    # mapped on their own, and 240 MB of 4 MB arrays (a chunk of a few hundred thousand rows)
    # WHEN every other one is freed, nothing trimmed
    done = subprocess.run([PYTHON, "-c", _MAPPED_BLOCKS_GO_BACK], env=python_env(), capture_output=True,
                          text=True, timeout=120, check=True)  # fmt: skip
    fallen_bytes, kept = map(int, done.stdout.split())
    # THEN the resident memory falls by most of the 120 MB freed at once
    assert fallen_bytes > 80 << 20
    assert kept == 30

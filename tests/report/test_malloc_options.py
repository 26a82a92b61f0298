"""summary tunes glibc malloc (arenas, large blocks) before its threads allocate; elsewhere nothing changes."""

from __future__ import annotations

import os
import platform

import numpy as np
import pytest

from kinetoscope.report import malloc_options


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's M_ARENA_MAX is glibc's")
def test_glibc_takes_the_cap() -> None:
    malloc_options.tune_malloc.cache_clear()
    assert malloc_options.tune_malloc() is True


def test_without_a_c_library_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    malloc_options.tune_malloc.cache_clear()
    monkeypatch.setattr(malloc_options, "mallopt_function", lambda: None)
    try:
        assert malloc_options.tune_malloc() is False
    finally:
        malloc_options.tune_malloc.cache_clear()


def test_the_threads_share_one_arena(monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a C library that records the settings asked of it
    asked: list[tuple[int, int]] = []
    recorded = lambda option, value: asked.append((option, value)) or 1  # noqa: E731
    monkeypatch.setattr(malloc_options, "mallopt_function", lambda: recorded)
    malloc_options.tune_malloc.cache_clear()
    try:
        # WHEN the summary tunes malloc
        assert malloc_options.tune_malloc() is True
    finally:
        malloc_options.tune_malloc.cache_clear()
    # THEN its threads share one arena, so the columns one thread frees serve the others
    assert (malloc_options.M_ARENA_MAX, 1) in asked


def _resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's mmap threshold")
def test_a_block_of_a_large_column_goes_back_to_the_system_once_freed() -> None:
    # GIVEN the summary's malloc settings
    malloc_options.tune_malloc.cache_clear()
    assert malloc_options.tune_malloc() is True
    # WHEN a column of 6 M rows of 64 bits (48 MiB, a large rank's) is made, then freed
    column = np.ones(6 << 20, dtype=np.int64)
    held = _resident_bytes()
    del column
    # THEN its pages leave at once (mapped on its own: in the heap, freed pages stay resident
    # behind what is allocated after them, 10 M tiny events: 2.5 GB peak instead of 2.1)
    assert _resident_bytes() < held - (40 << 20)

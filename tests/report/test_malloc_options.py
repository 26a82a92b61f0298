"""summary tunes glibc malloc (arenas, large blocks) before its threads allocate; elsewhere nothing changes."""

from __future__ import annotations

import platform

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

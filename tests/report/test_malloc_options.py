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

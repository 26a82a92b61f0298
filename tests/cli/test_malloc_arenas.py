"""summary caps glibc's malloc arenas before its threads allocate; elsewhere nothing changes."""

from __future__ import annotations

import ctypes.util
import platform

import pytest

from kinetoscope.cli import malloc_arenas


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="mallopt's M_ARENA_MAX is glibc's")
def test_glibc_takes_the_cap() -> None:
    malloc_arenas.limit_arenas.cache_clear()
    assert malloc_arenas.limit_arenas() is True


def test_without_a_c_library_nothing_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    malloc_arenas.limit_arenas.cache_clear()
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: None)
    try:
        assert malloc_arenas.limit_arenas() is False
    finally:
        malloc_arenas.limit_arenas.cache_clear()

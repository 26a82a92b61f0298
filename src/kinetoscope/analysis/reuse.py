"""Work on a table done once per summary: per-rank splits, kind masks and filters of the same
table, asked for again by many analyses and rules, are kept while a ``reusing()`` block runs.

Tables are immutable, so a result found for one table object holds for as long as that object
lives. The cache holds tables weakly: a table no longer used elsewhere goes, and what was found
for it with it (a new table that happens to get its ``id`` is not taken for it). Outside a block
nothing is kept and every call computes afresh. Filters (``frames.where``) are not kept: most
masks are asked once, and keeping their rows would cost more memory than filtering again."""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Callable, Hashable, Iterator
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")


class TableCache:
    """Results keyed by (the table object, what was asked of it)."""

    def __init__(self) -> None:
        self._held: dict[tuple[int, Hashable], tuple[weakref.ref[object], object]] = {}

    def get(self, table: object, key: Hashable, make: Callable[[], T]) -> T:
        slot = (id(table), key)
        found = self._held.get(slot)
        if found is not None and found[0]() is table:
            return found[1]  # type: ignore[return-value]
        value = make()
        self._held[slot] = (weakref.ref(table, lambda _: self._forget(slot)), value)
        return value

    def peek(self, table: object, key: Hashable) -> object | None:
        """What was found for ``table`` and ``key`` (None: nothing yet)."""
        found = self._held.get((id(table), key))
        return found[1] if found is not None and found[0]() is table else None

    def _forget(self, slot: tuple[int, Hashable]) -> None:
        found = self._held.get(slot)
        if found is not None and found[0]() is None:
            del self._held[slot]


_ACTIVE: ContextVar[TableCache | None] = ContextVar("kinetoscope_table_cache", default=None)


@contextlib.contextmanager
def reusing() -> Iterator[TableCache]:
    """A cache for the block (an enclosing block's, if one is open already)."""
    outer = _ACTIVE.get()
    if outer is not None:
        yield outer
        return
    cache = TableCache()
    token = _ACTIVE.set(cache)
    try:
        yield cache
    finally:
        _ACTIVE.reset(token)


def cached(table: object, key: Hashable, make: Callable[[], T]) -> T:
    """``make()``, or what it gave before for ``table`` and ``key`` inside the open ``reusing()`` block."""
    cache = _ACTIVE.get()
    return make() if cache is None else cache.get(table, key, make)


def peek(table: object, key: Hashable) -> object | None:
    """What ``cached`` holds for ``table`` and ``key`` in the open ``reusing()`` block (None: nothing)."""
    cache = _ACTIVE.get()
    return None if cache is None else cache.peek(table, key)

"""Work on a table done once per summary: per-rank splits, kind masks and filters of the same
table, asked for again by many analyses and rules, are kept while a ``reusing()`` block runs.

Tables are immutable, so a result found for one table object holds for as long as that object
lives. The cache holds tables weakly: a table no longer used elsewhere goes, and what was found
for it with it (a new table that happens to get its ``id`` is not taken for it). Outside a block
nothing is kept and every call computes afresh. Filters (``frames.where``) are not kept: most
masks are asked once, and keeping their rows would cost more memory than filtering again.

The cache may be shared by threads (``threaded``): a result asked by two threads at once is
found by one of them while the other waits for it, so nothing is computed twice."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import contextvars
import functools
import threading
import weakref
from collections.abc import Callable, Hashable, Iterator, Sequence
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")


class TableCache:
    """Results keyed by (the table object, what was asked of it)."""

    def __init__(self) -> None:
        self._held: dict[tuple[int, Hashable], tuple[weakref.ref[object], object]] = {}
        self._guard = threading.RLock()  # over ``_held`` and ``_finding`` (RLock: a weakref callback may run inside)
        self._finding: dict[tuple[int, Hashable], threading.RLock] = {}  # a lock per slot being found

    def __len__(self) -> int:
        """How many results are held (each goes when its table does)."""
        with self._guard:
            return len(self._held)

    def get(self, table: object, key: Hashable, make: Callable[[], T]) -> T:
        slot = (id(table), key)
        found = self._found(slot, table)
        if found is not None:
            return found[0]  # type: ignore[return-value]
        with self._guard:
            finding = self._finding.setdefault(slot, threading.RLock())
        with finding:  # one thread finds it; another asking meanwhile waits, then reads it
            found = self._found(slot, table)
            if found is not None:
                return found[0]  # type: ignore[return-value]
            try:
                value = make()
                with self._guard:
                    self._held[slot] = (weakref.ref(table, lambda _: self._forget(slot)), value)
            finally:
                with self._guard:
                    self._finding.pop(slot, None)
            return value

    def _found(self, slot: tuple[int, Hashable], table: object) -> tuple[object] | None:
        """``(value,)`` held for ``slot`` when it is ``table``'s (None: nothing held)."""
        with self._guard:
            found = self._held.get(slot)
        return (found[1],) if found is not None and found[0]() is table else None

    def peek(self, table: object, key: Hashable) -> object | None:
        """What was found for ``table`` and ``key`` (None: nothing yet)."""
        found = self._found((id(table), key), table)
        return None if found is None else found[0]

    def clear(self) -> None:
        """Let go of everything found (the cache and its tables refer to each other, so without
        this they wait for the garbage collector's next pass over cycles)."""
        with self._guard:
            self._held.clear()

    def _forget(self, slot: tuple[int, Hashable]) -> None:
        with self._guard:
            found = self._held.get(slot)
            if found is not None and found[0]() is None:
                del self._held[slot]


_ACTIVE: ContextVar[TableCache | None] = ContextVar("kinetoscope_table_cache", default=None)


@contextlib.contextmanager
def reusing(own: bool = False) -> Iterator[TableCache]:
    """A cache for the block (an enclosing block's, if one is open already, unless ``own``: a cache
    of its own, which lets go of everything found in it as the block ends, as a summary made rank
    by rank needs: a split keeps its table alive for as long as the cache lives)."""
    outer = _ACTIVE.get()
    if outer is not None and not own:
        yield outer
        return
    cache = TableCache()
    token = _ACTIVE.set(cache)
    try:
        yield cache
    finally:
        _ACTIVE.reset(token)
        cache.clear()


def cached(table: object, key: Hashable, make: Callable[[], T]) -> T:
    """``make()``, or what it gave before for ``table`` and ``key`` inside the open ``reusing()`` block."""
    cache = _ACTIVE.get()
    return make() if cache is None else cache.get(table, key, make)


def peek(table: object, key: Hashable) -> object | None:
    """What ``cached`` holds for ``table`` and ``key`` in the open ``reusing()`` block (None: nothing)."""
    cache = _ACTIVE.get()
    return None if cache is None else cache.peek(table, key)


def threaded(calls: Sequence[Callable[[], T]], workers: int, after_each: Callable[[], object] | None = None) -> list[T]:
    """Each of ``calls``' results, in order, computed by up to ``workers`` threads that share the
    open ``reusing()`` block's cache (one, or no block: one after another in this thread);
    ``after_each`` (None: nothing) called after each call, whatever it gave or raised.

    Most of an analysis's time is in Arrow and numpy, which let other threads run meanwhile, so
    two threads finish a summary's analyses and rules in about two thirds of the time one takes."""
    if after_each is not None:
        calls = [functools.partial(_then, call, after_each) for call in calls]
    if workers <= 1 or len(calls) <= 1:
        return [call() for call in calls]
    with cf.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="kinetoscope-analysis") as pool:
        futures = [pool.submit(contextvars.copy_context().run, call) for call in calls]
        return [future.result() for future in futures]


def _then(call: Callable[[], T], after: Callable[[], object]) -> T:
    try:
        return call()
    finally:
        after()

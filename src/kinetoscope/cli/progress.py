"""A progress bar on a terminal (rich), nothing when output is redirected."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

MIB = 1 << 20


class Bar:
    """``bar(done, total, label)`` as each item (session) ends; ``bar.reading(item, read_bytes,
    size_bytes)`` while one item's file is read: its label says how far, and the elapsed time
    moves on. Draws nothing without a terminal."""

    def __init__(self, drawn: Any = None) -> None:
        self._drawn = drawn  # (rich Progress, its task), or None: silent
        self._counts = (0, 0)  # (done, total) items, as last said: the bar's own position

    def __call__(self, done: int, total: int, label: str) -> None:
        self._counts = (done, total)
        self._update(label)

    def reading(self, item: str, read_bytes: int, size_bytes: int) -> None:
        """The bar moves on through the item as its bytes are read."""
        share = read_bytes / size_bytes if size_bytes else 1.0
        self._update(f"{item}: {read_bytes / MIB:,.1f} of {size_bytes / MIB:,.1f} MiB read", share)

    def _update(self, label: str, share: float = 0.0) -> None:
        if self._drawn is None:
            return
        bar, task = self._drawn
        done, total = self._counts
        bar.update(task, completed=done + share, total=total or None, description=label, refresh=True)


@contextmanager
def progress_bar(title: str, enabled: bool = True) -> Iterator[Bar]:
    """Yields a ``Bar``; it draws on stderr when stderr is a terminal."""
    if not enabled or not sys.stderr.isatty():
        yield Bar()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as RichProgress

    with RichProgress(
        TextColumn(f"{title}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        console=Console(stderr=True),  # stdout may be the command's output (summary --json > file)
        redirect_stdout=False,  # what is printed meanwhile stays on stdout
        transient=True,
        # drawn on each update, without a refresh thread: ingest forks workers for one large
        # trace only from a process running no other thread (see ingest/chunked.py)
        auto_refresh=False,
    ) as drawn:
        yield Bar((drawn, drawn.add_task("", total=None)))

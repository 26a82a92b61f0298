"""A progress bar on a terminal (rich), nothing when output is redirected."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

MIB = 1 << 20


def mib_read(read_bytes: int, size_bytes: int) -> str:
    return f"{read_bytes / MIB:,.1f} of {size_bytes / MIB:,.1f} MiB"


@dataclass
class Tally:
    """Where an ingest stands: the items (sessions) ended of all, as ``progress`` last said, and
    how far through the next one its reading is."""

    done: int = 0
    total: int = 0

    def ended(self, done: int, total: int) -> None:
        self.done, self.total = done, total

    def through(self, read_bytes: int, size_bytes: int) -> float:
        """The items ended plus the share of the one being read."""
        return self.done + (read_bytes / size_bytes if size_bytes else 1.0)


class Bar:
    """``bar(done, total, label)`` as each item (session) ends; ``bar.reading(item, read_bytes,
    size_bytes)`` while one item's file is read: its label says how far, the bar moves through
    it, and the elapsed time moves on. Draws nothing without a terminal."""

    def __init__(self, drawn: Any = None) -> None:
        self._drawn = drawn  # (rich Progress, its task), or None: silent
        self._tally = Tally()

    def __call__(self, done: int, total: int, label: str) -> None:
        self._tally.ended(done, total)
        self._update(label, done)

    def reading(self, item: str, read_bytes: int, size_bytes: int) -> None:
        self._update(f"{item}: {mib_read(read_bytes, size_bytes)} read", self._tally.through(read_bytes, size_bytes))

    def _update(self, label: str, completed: float) -> None:
        if self._drawn is None:
            return
        bar, task = self._drawn
        bar.update(task, completed=completed, total=self._tally.total or None, description=label, refresh=True)


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
        # drawn on each update, without a refresh thread
        auto_refresh=False,
    ) as drawn:
        yield Bar((drawn, drawn.add_task("", total=None)))

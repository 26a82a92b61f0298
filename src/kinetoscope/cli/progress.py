"""A progress bar on a terminal (rich), nothing when output is redirected."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

Progress = Callable[[int, int, str], None]


def _silent(done: int, total: int, label: str) -> None:
    return None


@contextmanager
def progress_bar(title: str, enabled: bool = True) -> Iterator[Progress]:
    """Yields ``progress(done, total, label)``; draws a bar on stderr when it is a terminal."""
    if not enabled or not sys.stderr.isatty():
        yield _silent
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn(f"{title}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("{task.description}"),
        transient=True,
        # drawn on each update, without a refresh thread: ingest forks workers for one large
        # trace only from a process running no other thread (see ingest/chunked.py)
        auto_refresh=False,
    ) as bar:
        task = bar.add_task("", total=None)

        def update(done: int, total: int, label: str) -> None:
            bar.update(task, completed=done, total=total, description=label, refresh=True)

        yield update

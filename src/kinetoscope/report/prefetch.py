"""Reading a dataset's tables while ``summary`` imports its analyses.

Importing the analyses (``pyarrow.compute``'s functions and about forty modules) holds the
interpreter for about a fifth of a second, and reading the
Parquet parts is decoding in Arrow, which lets other threads run. So a full summary of a local
dataset starts reading the columns every analysis and rule reads (``COLUMNS``) on a thread of
its own before it imports them, and takes that read once it knows which columns it needs: the
same tables ``Dataset.load`` gives, read once; the one screen, which makes fewer analyses, takes
its columns of them. Where it needs columns ``COLUMNS`` lacks (the analyses came to read other
columns), or the read failed, it reads them again as it would have without this (a failing part
then fails there, with the error it always gave)."""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

import pyarrow as pa

# The columns ``analysis.needed_columns(ANALYSES)`` names (held to it by a test), in its order.
COLUMNS: dict[str, tuple[str, ...] | None] = {
    "allocations": None,
    "counters": ("run", "rank", "name", "ts_ns", "value", "unit", "device"),
    "events": (
        *("run", "rank", "id", "layer", "name", "category", "kind", "ts_ns", "dur_ns", "tid", "device"),
        *("collective", "depth", "parent_id", "op_id", "launch_id", "correlation", "self_ns", "step"),
        *("args", "stream", "stack_id"),
    ),
    "frames": None,
    "sessions": None,
    "warnings": None,
}

# The integer columns the analyses read in half their width as well as in full: the 64-bit ids,
# threads, streams and durations in 32 bits, the 32-bit ranks, devices, depths and steps in 16,
# each where every value read fits (``Dataset.load``; durations and self times under 2.1 s), 2 to
# 4 bytes less per row each; the events' ``run``, read dictionary-encoded as ``analysis.prepare``
# keeps it (not as text first); and their ``args``, null on the rows whose text no analysis reads
# (``kinds.ARGS_IN_COLUMNS_KINDS``).
NARROWED: dict[str, tuple[str, ...]] = {
    "events": (
        *("run", "rank", "id", "parent_id", "op_id", "launch_id", "correlation", "tid", "stream", "stack_id"),
        *("dur_ns", "self_ns", "device", "depth", "step", "args"),
    ),
}

Loaded = dict[str, pa.Table]


class Early:
    """The tables being read, handed over once: the summary drops the tables as read (many chunks)
    once it has its own prepared copy, and nothing else may keep them (the future would, to its end).
    ``rank``: the (run, rank) whose rows they are, for a summary made rank by rank (None: every rank)."""

    def __init__(self, future: cf.Future[list[Loaded]], rank: tuple[str, int] | None = None) -> None:
        self._future: cf.Future[list[Loaded]] | None = future  # its result: a list the tables leave
        self.rank = rank

    def take(self) -> Loaded | None:
        """The tables (None: the read failed, or they were taken already)."""
        future, self._future = self._future, None
        if future is None:
            return None
        try:
            held = future.result()
        except Exception:  # noqa: BLE001 - read again on the caller's own path, which reports it
            return None
        return held.pop() if held else None


@contextlib.contextmanager
def prefetching(
    path: Path | str, run: str | None, wanted: bool, rank: tuple[str, int] | None = None
) -> Iterator[Early | None]:
    """The read of ``COLUMNS`` of the dataset at ``path`` (``run``'s rows; only ``rank``'s, the
    (run, rank) a summary rank by rank starts with, where given), started on a thread of its own;
    None where ``path`` is not a local dataset (a profile tree is ingested first, an object store
    is read where it lies) or not ``wanted``. The block waits for the read to end."""
    from kinetoscope.dataset import directory

    if not wanted or not isinstance(path, Path) or not directory.is_dataset(path):
        yield None
        return
    with cf.ThreadPoolExecutor(1, thread_name_prefix="kinetoscope-prefetch") as pool:
        yield Early(pool.submit(load_share, path, run, rank), rank)


def load_share(path: Path, run: str | None, rank: tuple[str, int] | None) -> list[Loaded]:
    from kinetoscope.query import Dataset

    run, one = rank if rank is not None else (run, None)
    return [Dataset(path).load(COLUMNS, run=run, rank=one, narrowed=NARROWED)]


def taken(
    early: Early | None, columns: Mapping[str, Sequence[str] | None], rank: tuple[str, int] | None = None
) -> Loaded | None:
    """The tables read early, where they hold ``columns`` of ``rank`` (None: of every rank), each
    cut to its ``columns`` (the one screen reads fewer than ``COLUMNS``); else None: read them now."""
    if early is None or early.rank != rank or not all(_covered(name, cols) for name, cols in columns.items()):
        return None
    held = early.take()
    if held is None:
        return None
    return {name: held[name] if cols is None else held[name].select(list(cols)) for name, cols in columns.items()}


def _covered(table: str, columns: Sequence[str] | None) -> bool:
    """Whether the early read holds ``columns`` of ``table`` (None: every column)."""
    if table not in COLUMNS:
        return False
    have = COLUMNS[table]
    return have is None or (columns is not None and set(columns) <= set(have))

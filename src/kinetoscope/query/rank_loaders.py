"""One rank's rows of a dataset, read where the dataset lies (a directory or an object store), so that
per-rank work can run anywhere the dataset is reachable without any process holding every rank."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path

import pyarrow as pa

from kinetoscope.dataset.storage import is_url
from kinetoscope.query.dataset import Dataset
from kinetoscope.query.object_store import StoredDataset

Columns = Mapping[str, Sequence[str] | None]
RankLoader = Callable[[Columns], dict[str, pa.Table]]


def _opened(where: Path | str) -> Dataset:
    return StoredDataset(str(where)) if is_url(where) else Dataset(Path(where))


def rank_keys(where: Path | str, run: str | None = None) -> list[tuple[str, int]]:
    """The (run, rank) pairs the dataset's manifest lists, sorted (only ``run``'s when given)."""
    return _opened(where).manifest.ranks(run)


def load_rank(
    where: Path | str, columns: Columns, *, run: str, rank: int, narrowed: Mapping[str, Collection[str]] | None = None
) -> dict[str, pa.Table]:
    """``columns`` (table -> columns, None: all) of the rows of ``run``'s ``rank``, as ``Dataset.load``
    gives them for all ranks (``narrowed`` as it takes it); only that rank's partition (and rows) are read."""
    return _opened(where).load(columns, run=run, rank=rank, narrowed=narrowed)


def rank_loaders(where: Path | str, run: str | None = None) -> list[RankLoader]:
    """One picklable loader per (run, rank) of the dataset, in (run, rank) order: hand them to workers."""
    return [functools.partial(load_rank, where, run=r, rank=k) for r, k in rank_keys(where, run)]

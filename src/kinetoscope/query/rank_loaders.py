"""One rank's rows of a dataset, read where the dataset lies (a directory or an object store), so that
per-rank work can run anywhere the dataset is reachable without any process holding every rank."""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs

from kinetoscope._errors import FormatError
from kinetoscope.ingest import dataset_dir as layout
from kinetoscope.ingest.schema import TABLES_BY_NAME
from kinetoscope.ingest.storage import Location, is_url, open_location
from kinetoscope.query.object_store import arrow_dataset

Columns = Mapping[str, Sequence[str] | None]
RankLoader = Callable[[Columns], dict[str, pa.Table]]


def _location(where: Path | str) -> Location:
    if is_url(where):
        return open_location(str(where))
    root = Path(where).resolve()
    return Location(str(root), pafs.LocalFileSystem(), root.as_posix())


def rank_keys(where: Path | str, run: str | None = None) -> list[tuple[str, int]]:
    """The (run, rank) pairs the dataset's manifest lists, sorted (only ``run``'s when given)."""
    location = _location(where)
    if not location.exists(layout.MANIFEST):
        raise FormatError(f"{where}: not a kinetoscope dataset (no {layout.MANIFEST})")
    with tempfile.TemporaryDirectory(prefix="kinetoscope-manifest-") as scratch:
        location.download(layout.MANIFEST, Path(scratch) / layout.MANIFEST)
        manifest = layout.load_manifest(Path(scratch))
    keys = {(record.run, record.rank) for record in manifest.sessions.values()}
    return sorted(key for key in keys if run is None or key[0] == run)


def load_rank(where: Path | str, columns: Columns, *, run: str, rank: int) -> dict[str, pa.Table]:
    """``columns`` (table -> columns, None: all) of the rows of ``run``'s ``rank``, as ``Dataset.load``
    gives them for all ranks; only that rank's partition (and rows) are read."""
    location = _location(where)
    wanted_rows = (pads.field("run") == run) & (pads.field("rank") == rank)
    tables = {}
    for name, chosen in columns.items():
        declared = TABLES_BY_NAME[name]
        wanted = list(chosen) if chosen is not None else declared.column_names()
        source = arrow_dataset(location, name)
        if source is None:
            tables[name] = declared.empty().select(wanted)
        elif "rank" in source.schema.names:
            tables[name] = source.to_table(columns=wanted, filter=wanted_rows)
        else:  # a table of the whole dataset (``schema``)
            tables[name] = source.to_table(columns=wanted)
    return tables


def rank_loaders(where: Path | str, run: str | None = None) -> list[RankLoader]:
    """One picklable loader per (run, rank) of the dataset, in (run, rank) order: hand them to workers."""
    return [functools.partial(load_rank, where, run=r, rank=k) for r, k in rank_keys(where, run)]

"""What `kinetoscope view` opens: a dataset as it is, or a profile directory ingested first."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kinetoscope._errors import CommandError
from kinetoscope.query.dataset import Dataset
from kinetoscope.report.opening import open_dataset

if TYPE_CHECKING:
    from kinetoscope.ingest.running.executors import Reading
    from kinetoscope.ingest.running.pipeline import Progress


def resolve_dataset(path: Path, *, say: Callable[[str], None] = print,
                    progress: Progress | None = None, reading: Reading | None = None) -> Dataset:
    """The dataset at `path`, ingesting `path` first when it is a profile directory (``open_dataset``,
    which tells `say` what it does).

    Ingest is incremental: sessions unchanged since the last ingest are not read again.
    `progress(done, total, session)` follows the ingest, `reading(session, read_bytes, size_bytes)`
    the reading of a session's trace where the sessions are read in this process.
    """
    if not path.exists():
        raise CommandError(f"{path}: no such file or directory", exit_code=2)
    return open_dataset(path, progress, reading, say=say)

"""What `kinetoscope view` opens: a dataset as it is, or a profile directory ingested first."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kinetoscope._errors import CommandError
from kinetoscope.ingest import IngestOptions, default_dataset_path, ingest
from kinetoscope.ingest.dataset_dir import is_dataset
from kinetoscope.query.dataset import Dataset

if TYPE_CHECKING:
    from kinetoscope.ingest.executors import Reading
    from kinetoscope.ingest.pipeline import Progress


def resolve_dataset(path: Path, *, say: Callable[[str], None] = print,
                    progress: Progress | None = None, reading: Reading | None = None) -> Dataset:
    """The dataset at `path`, ingesting `path` first when it is a profile directory.

    Ingest is incremental: sessions unchanged since the last ingest are not read again.
    `progress(done, total, session)` follows the ingest, `reading(session, read_bytes, size_bytes)`
    the reading of a session's trace where the sessions are read in this process.
    """
    if not path.exists():
        raise CommandError(f"{path}: no such file or directory", exit_code=2)
    if is_dataset(path):
        return Dataset(path)
    out = default_dataset_path(path)
    say(f"ingesting {path} into {out} ...")
    report = ingest(IngestOptions(profile_dir=path, out=out), progress, reading)
    for refused in report.refused:
        say(f"  warning: {refused}")
    for outcome in report.outcomes:
        for problem in getattr(outcome, "problems", [])[:5]:
            say(f"  warning: {problem}")
    say(f"ingested {len(report.outcomes)} session(s), {len(report.skipped)} unchanged ({report.status})")
    return Dataset(out)

"""Opening a profile: the dataset of a profile tree, ingested (incrementally) first where needed.

The one way the commands, ``kinetoscope.open`` and the viewer reach a dataset from what a user
names: a dataset directory or an object-store URL is read as it is (``query.read_dataset``); a
profile tree is ingested into its default dataset, then read.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kinetoscope.dataset import directory
from kinetoscope.dataset.storage import is_url
from kinetoscope.query.dataset import Dataset, read_dataset

if TYPE_CHECKING:
    from kinetoscope.ingest.running.executors import Reading
    from kinetoscope.ingest.running.pipeline import Progress


def open_dataset(
    path: str | Path,
    progress: Progress | None = None,
    reading: Reading | None = None,
    say: Callable[[str], None] | None = None,
) -> Dataset:
    """A dataset directory, or a profile tree ingested (incrementally) into its default dataset
    (``progress`` and ``reading`` follow that ingest, see ``ingest``); or a dataset on an object
    store (an ``s3://`` URL, as text). What the ingest has to say (refused paths, jobs kept
    apart) goes to standard error, or to ``say`` where given, which also hears what is ingested
    where, each session's first problems and the counts (the viewer's log)."""
    if isinstance(path, str) and is_url(path):
        return read_dataset(path)
    path = Path(path)
    if directory.is_dataset(path):
        return read_dataset(path)
    from kinetoscope.ingest import IngestOptions, default_dataset_path, ingest

    out = default_dataset_path(path)
    tell = say or (lambda line: print(line, file=sys.stderr))
    if say is not None:
        say(f"ingesting {path} into {out} ...")
    report = ingest(IngestOptions(profile_dir=path, out=out), progress, reading)
    for refused in report.refused + report.damaged:
        tell(f"warning: {refused}")
    if report.jobs:
        jobs = ", ".join(f"{job!r} -> run {run!r}" for job, _, run in report.jobs)
        tell(f"note: {path} holds sessions of {len(report.jobs)} jobs, kept apart as runs: {jobs}")
    if say is not None:
        for outcome in report.outcomes:
            for problem in getattr(outcome, "problems", [])[:5]:
                say(f"warning: {problem}")
        say(f"ingested {len(report.outcomes)} session(s), {len(report.skipped)} unchanged ({report.status})")
    return read_dataset(out)

"""The PROFILE argument the reading commands share: a profile tree, a dataset, or raw traces.

Raw torch.profiler traces (``*.json``, ``*.json.gz``, or folders of them) are imported first,
once, into a cache beside them (``importer.trace_cache``); the command then reads that profile.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from kinetoscope._errors import CommandError
from kinetoscope.cli.locations import location
from kinetoscope.format.session_files import session_dir as layout

if TYPE_CHECKING:
    from kinetoscope.query.dataset import Dataset

TRACES_HELP = "; or torch.profiler traces (*.json[.gz], one per rank), imported first into a cache beside them"


def view_target(paths: Sequence[object]) -> str:
    """The profile as the user named it, quoted for a shell: the ``kinetoscope view`` commands that
    open the findings' evidence name it so (the same paths open the same dataset)."""
    return " ".join(shlex.quote(str(p)) for p in paths) or "PATH"


def add_profile_argument(parser: argparse.ArgumentParser, name: str, what: str) -> None:
    """A positional of one or more paths: ``what`` says which profiles the command reads."""
    parser.add_argument(name, type=location, nargs="+", metavar=name.upper(), help=what + TRACES_HELP)


BeforeImport = Callable[[list[Path]], object]  # hears the traces about to be imported


def profile_path(
    paths: list[Path | str], say: Callable[[str], None] | None = None, before_import: BeforeImport | None = None
) -> Path | str:
    """The profile tree or dataset the paths name, importing raw traces first (notes to `say`, by
    default on stderr; ``before_import(traces)`` run just before an import); an object-store URL
    (``s3://...``) is read where it lies."""
    urls = [p for p in paths if isinstance(p, str)]
    if urls and len(paths) == 1:
        return urls[0]
    if urls:
        raise CommandError(f"{urls[0]}: an object-store URL names one dataset or profile, given alone", exit_code=2)
    local = [p for p in paths if isinstance(p, Path)]
    if len(local) == 1 and layout.is_profile(local[0]):
        return local[0]  # the common case: no need to load the importer
    from kinetoscope.importer.trace_cache import profile_for

    return profile_for(local, say or (lambda line: print(line, file=sys.stderr, flush=True)), before_import)


def local_profile_path(
    paths: list[Path | str],
    command: str,
    say: Callable[[str], None] | None = None,
    before_import: BeforeImport | None = None,
) -> Path:
    """``profile_path`` for the commands that read local files only (an object-store URL is refused)."""
    found = profile_path(paths, say, before_import)
    if isinstance(found, str):
        raise CommandError(
            f"{found}: {command} reads local files; summary and sql read an s3:// dataset where it lies "
            "(docs/fleet.md), or copy it here first",
            exit_code=2,
        )
    return found


def warm_ingest(traces: list[Path]) -> None:
    """``before_import`` of a command that ingests the traces it imports: the ingest's worker
    processes start now and import their modules while this process imports the traces."""
    from kinetoscope.format.kineto.trace_source import expanded_size_bytes
    from kinetoscope.ingest.running.pipeline import prestart_workers

    prestart_workers([expanded_size_bytes(trace) for trace in traces])


def opened_dataset(path: Path | str) -> Dataset:
    """``report.opening.open_dataset(path)``: a profile tree is ingested first, with a progress bar on a
    terminal (the sessions, and the MiB read of the trace being read); a dataset is opened as it
    is, without loading the bar."""
    from kinetoscope.dataset.directory import is_dataset
    from kinetoscope.report.opening import open_dataset

    if isinstance(path, str) or is_dataset(path):
        return open_dataset(path)
    from kinetoscope.cli.progress import progress_bar

    with progress_bar("ingest") as bar:
        return open_dataset(path, bar, bar.reading)

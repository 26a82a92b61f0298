"""Ingest session directories into a Parquet dataset (partitioned by run and rank).

Every session under PROFILE_DIR (captured, or made by `kinetoscope import`) is read in
parallel; sessions unchanged since the last ingest into the same dataset are skipped. A
session that cannot be read fully still contributes what it can; the `warnings` table says
what was skipped. Exit status: 0 all sessions complete, 1 some data skipped or a session
failed, 2 nothing could be ingested.

PROFILE_DIR and --out may be s3:// URLs; with --scheduler (or $KINETOSCOPE_SCHEDULER) the
sessions are ingested by the workers of a Dask cluster, which must reach both.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from kinetoscope.cli.locations import SCHEDULER_ENV, location
from kinetoscope.cli.progress import progress_bar

if TYPE_CHECKING:
    from kinetoscope.ingest import IngestReport


class IngestCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "profile_dir", type=location, help="profile tree: a directory (or s3:// URL) of session directories"
        )
        parser.add_argument(
            "--out",
            type=location,
            default=None,
            help="dataset directory or s3:// URL (default: PROFILE_DIR/.kinetoscope/dataset)",
        )
        parser.add_argument("--run", default=None, help="run name in the dataset (default: PROFILE_DIR's name)")
        parser.add_argument(
            "--jobs",
            type=int,
            default=0,
            help="processes, the caller's included (default: one per CPU for large traces)",
        )
        parser.add_argument(
            "--batch-size",
            type=int,
            default=10_000,
            help="events decoded at once (bounds the decoding's memory only; a session's whole-trace "
            "columns add about 100 bytes per event at their peak: docs/performance.md#memory)",
        )
        parser.add_argument("--force", action="store_true", help="re-read sessions even when unchanged")
        parser.add_argument(
            "--scheduler",
            default=None,
            help=f"Dask scheduler (tcp://HOST:PORT) whose workers ingest the sessions (default: ${SCHEDULER_ENV})",
        )
        parser.add_argument("--quiet", action="store_true", help="print only problems")

    def run(self, args: argparse.Namespace) -> int:
        from kinetoscope._freed_memory import map_large_blocks
        from kinetoscope.ingest import IngestOptions, default_dataset_location, ingest

        # A process of its own that only ingests: a session-wide step's copies go back to the system
        # once freed (glibc's settings are the process's: a program calling ``main`` keeps its own, and
        # so do commands that ingest on the way to something else).
        if args.own_process:
            map_large_blocks()

        options = IngestOptions(
            profile_dir=args.profile_dir,
            out=args.out or default_dataset_location(args.profile_dir),
            run=args.run,
            jobs=args.jobs,
            batch_size=args.batch_size,
            force=args.force,
            scheduler=args.scheduler or os.environ.get(SCHEDULER_ENV) or None,
        )
        with progress_bar("ingest", enabled=not args.quiet) as progress:
            report = ingest(options, progress, progress.reading)
        print_report(report, sys.stdout, quiet=args.quiet)
        return report.exit_code


def print_report(report: IngestReport, out: Any, quiet: bool = False) -> None:
    for refused in report.refused:
        print(f"warning: {refused}", file=out)
    for damaged in report.damaged:
        print(f"warning: {damaged}", file=out)
    for outcome in sorted(report.outcomes, key=lambda o: (o.rank, o.session)):
        if quiet and outcome.status == "ok":
            continue
        stats = outcome.stats
        line = (
            f"rank {outcome.rank:>3}  {outcome.session}  {outcome.status:<7} {stats.events:>9,} events  "
            f"{stats.flows:>8,} flows  {stats.counters:>7,} samples  {outcome.warnings:>5} warnings"
        )
        print(line + (f"  ({outcome.message})" if outcome.message else ""), file=out)
    for job, source, run in report.jobs:
        print(f"note: job {job!r} (from {source}) -> run {run!r}", file=out)
    if not quiet:
        runs = f"run {report.run!r}" if len(report.runs) == 1 else f"{len(report.jobs)} jobs kept apart as runs "
        runs += "" if len(report.runs) == 1 else ", ".join(repr(r) for r in report.runs)
        print(
            f"{len(report.outcomes)} session(s) ingested, {len(report.skipped)} unchanged, "
            f"{len(report.removed)} removed -> {report.dataset} ({runs}): {report.status}",
            file=out,
        )
    if report.status != "ok":
        print(f'see what was skipped: kinetoscope sql {report.dataset} "SELECT * FROM warnings"', file=out)


command = IngestCommand()

"""Summarise a profile: per-rank and across-rank analyses.

Per rank: wall time and steps, host and device busy time, top framework ops (self and total
time), top kernels, memory copies and sets, collective time and its overlap with
computation, host CPU and memory, device memory and allocation peaks, dropped events.
Device time by launching op, input shape, outermost annotation and op category, and the
roofline per op and shape. Where the device's idle time goes (host wait, launch latency, sync),
launch delays, queues and short kernels, and the steady-state window (--steady-state runs the
analyses on it alone). Across ranks: step-time spread and the straggler. Findings
(`kinetoscope findings`) come first unless --only picks analyses. PROFILE_DIR is ingested
first (only what changed since the last time); a DATASET is read as is.

--categories FILE (or $KINETOSCOPE_CATEGORIES) adds category name patterns, tried before the
built-in ones: a JSON or TOML table of category -> list of regular expressions.
--device NAME (or $KINETOSCOPE_DEVICE) sets the device the roofline uses: a table entry
(`H100 SXM`, `MI300X`, ...) or a JSON or TOML file of one entry's fields.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from kinetoscope.cli.locations import SCHEDULER_ENV, missing
from kinetoscope.cli.sources import add_profile_argument, opened_dataset, profile_path, view_target, warm_ingest
from kinetoscope.report import rank_pool
from kinetoscope.report.settings import BY_RANK_EVENTS, SERIAL_EVENTS, THREADED_EVENTS, default_threads


class SummaryCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_profile_argument(parser, "path", "a profile tree or an ingested dataset")
        form = parser.add_mutually_exclusive_group()
        form.add_argument("--json", dest="output", action="store_const", const="json", help="JSON output")
        form.add_argument("--markdown", dest="output", action="store_const", const="markdown", help="Markdown output")
        parser.add_argument(
            "--top",
            type=int,
            default=10,
            help="rows per rank in the ranked analyses (top_ops, top_kernels, gpu_time_by_*, op_roofline, "
            "top_allocation_stacks; default 10)",
        )
        parser.add_argument(
            "--all",
            action="store_true",
            help="every section in full (default: the answer in one screen; --json and --markdown keep every section)",
        )
        parser.add_argument(
            "--section",
            action="append",
            default=[],
            metavar="NAME",
            help="show this section in full: an analysis or 'findings' (repeatable, or comma-separated)",
        )
        parser.add_argument("--only", default="", help="comma-separated analyses to run (default: all)")
        parser.add_argument("--run", default=None, help="only this run of a multi-run dataset")
        parser.add_argument(
            "--window-launched-only",
            action="store_true",
            help="leave out device work launched before the profiling window (as HTA and TraceLens do)",
        )
        parser.add_argument(
            "--steady-state",
            action="store_true",
            help="only the events in each rank's steady-state window (the steady_state analysis: warm-up left out)",
        )
        parser.add_argument(
            "--short-kernel-us",
            type=float,
            default=10.0,
            help="device work shorter than this is a short kernel in kernel_launches (default 10)",
        )
        parser.add_argument(
            "--threads",
            type=int,
            default=None,
            help=f"threads computing the analyses and findings (default {default_threads()}: the CPUs this "
            f"process may use, at most 4, and one for a dataset under {THREADED_EVENTS:,} events or for "
            f"{SERIAL_EVENTS:,} events or more at once, where each running analysis costs memory; 1: one "
            "after another)",
        )
        parser.add_argument(
            "--by-rank",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="read and analyse one rank at a time in each process (this one, or each of --workers), so "
            "that memory holds a few ranks' rows, not all (default: for a dataset of several ranks and "
            f"{BY_RANK_EVENTS:,} events or more); the same results either way",
        )
        parser.add_argument(
            "--workers",
            type=int,
            default=None,
            help="worker processes analysing ranks side by side, each on its share of the CPUs and at most "
            "--threads threads; implies --by-rank (default, rank by rank: from "
            f"{rank_pool.MIN_CPUS} CPUs on, one per {rank_pool.CPUS_PER_WORKER} CPUs and at most one per rank, "
            "as many as the available memory holds; else 1: every rank in this process)",
        )
        parser.add_argument(
            "--scheduler",
            default=None,
            help="Dask scheduler (tcp://HOST:PORT) whose workers analyse the ranks, each reading its rank where "
            f"the dataset lies (default: ${SCHEDULER_ENV})",
        )
        parser.add_argument("--categories", type=Path, default=None, help="JSON or TOML file of op category patterns")
        parser.add_argument("--device", default=None, help="roofline device: a table entry or a JSON or TOML file")

    def run(self, args: argparse.Namespace) -> int:
        from kinetoscope._errors import CommandError
        from kinetoscope.cli.environment import user_options
        from kinetoscope.report.local_files import local_files_only
        from kinetoscope.report.malloc_options import arrow_system_pool, tune_malloc
        from kinetoscope.report.output import ALL, SCREEN, SECTIONS, Output, write
        from kinetoscope.report.runner import FINDINGS, summary
        from kinetoscope.report.settings import ReportOptions

        tune_malloc()  # before any thread allocates: the import, the ingest and the analyses' threads
        arrow_system_pool()  # the ingest's Parquet writes and the reads too: before pyarrow is loaded
        if args.own_process and all(isinstance(p, Path) for p in args.path):
            local_files_only()  # no object store is read: their file systems stay unloaded
        only = tuple(n.strip() for n in args.only.split(",") if n.strip())
        shown = tuple(n.strip() for given in args.section for n in given.split(",") if n.strip())
        if shown and not only:  # only the analyses named (every one, and the rules, for the findings)
            only = () if FINDINGS in shown else shown
        output = Output(args.output or "text", SECTIONS if shown else ALL if args.all or only else SCREEN, shown,
                        view_target(args.path))  # fmt: skip
        path = profile_path(args.path, before_import=warm_ingest)
        options = ReportOptions(
            top=args.top, only=only, run=args.run, window_launched_only=args.window_launched_only,
            steady_state=args.steady_state, short_kernel_us=args.short_kernel_us,
            threads=default_threads() if args.threads is None else args.threads, threads_asked=args.threads is not None,
            by_rank=args.by_rank, workers=args.workers, user=user_options(args.categories, args.device),
            # ``--workers`` asks for this machine: the environment's scheduler then does not apply
            scheduler=args.scheduler or (os.environ.get(SCHEDULER_ENV) if args.workers is None else None) or None,
        )
        if missing(path):
            raise CommandError(f"{path}: no such file or directory")
        made = summary(path, options, opened_dataset, facts=output.one_screen, shown=shown, screen=output.one_screen)
        write(made, output, sys.stdout)
        return 0


command = SummaryCommand()

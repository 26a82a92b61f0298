"""Turn existing torch.profiler traces into kinetoscope session directories.

Each trace file (*.json or *.json.gz, one per rank; CUDA, ROCm, MTIA or CPU-only; old and
new Kineto formats) becomes a session directory under --out with trace.json, the system
trace (ntrace.pb), one device trace per device (device_<N>.pb) and trace_info.pb, so every
other command works on it. --no-pb leaves out ntrace.pb and device_<N>.pb (a light session:
every reading command reads trace.json alone; they serve dump and ui.perfetto.dev), and
--pb SESSION... writes them later into light sessions (or the profile trees holding them).
Directories are searched for traces; files in them that are not torch.profiler traces are
listed and left out. Rank, world size and backend come from the
trace's distributedInfo; a trace without it is imported as a single process, and the output
says so. Damaged events are skipped, counted, reported per file and recorded in
trace_info.pb. Exit code 0 when every trace was imported, 1 when one could not be.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from kinetoscope._errors import CommandError, FormatError, KinetoscopeError
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.importer import trace_import as imp

_EXAMPLES_PER_FILE = 5


@dataclass(frozen=True)
class ImportCommandOptions:
    paths: tuple[Path, ...]
    out_dir: Path
    force: bool
    write_pb: bool = True


class ImportCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("paths", nargs="+", type=Path, metavar="TRACE_OR_DIR", help="trace files or directories")
        parser.add_argument("--out", type=Path, help="directory to create the sessions in (required unless --pb)")
        parser.add_argument(
            "--force", action="store_true", help="replace sessions imported before from the same traces"
        )
        which = parser.add_mutually_exclusive_group()
        which.add_argument(
            "--no-pb",
            action="store_true",
            help="write no ntrace.pb or device_<N>.pb (a light session: trace.json and trace_info.pb)",
        )
        which.add_argument(
            "--pb",
            action="store_true",
            help="the paths are light sessions (or profile trees of them): write their ntrace.pb and device_<N>.pb",
        )

    def run(self, args: argparse.Namespace) -> int:
        if args.pb:
            return write_packet_files(tuple(args.paths), sys.stdout)
        if args.out is None:
            raise CommandError("--out is required: the directory to create the sessions in", exit_code=2)
        options = ImportCommandOptions(
            paths=tuple(args.paths), out_dir=args.out, force=args.force, write_pb=not args.no_pb
        )
        return import_all(options, sys.stdout)


def import_all(options: ImportCommandOptions, out: TextIO) -> int:
    missing = [path for path in options.paths if not path.exists()]
    if missing:
        raise CommandError(f"{missing[0]}: no such file or directory", exit_code=2)
    explicit = {path for path in options.paths if path.is_file()}
    traces = imp.find_trace_files(options.paths)
    if not traces:
        raise CommandError(
            "no *.json or *.json.gz trace found in the given paths "
            "(the trace.json of a kinetoscope session is already part of a session)",
            exit_code=2,
        )
    settings = imp.ImportOptions(out_dir=options.out_dir, force=options.force, write_pb=options.write_pb)
    results, failed = [], 0
    for trace in traces:
        try:
            result = imp.import_trace(trace, settings)
        except FormatError as exc:
            failed += _report_unreadable(trace, exc, trace in explicit, out)
            continue
        except (KinetoscopeError, OSError) as exc:
            out.write(f"FAILED {trace}: {exc}\n")
            failed += 1
            continue
        report(result, out)
        results.append(result)
    _report_rank_clashes(results, out)
    out.write(f"{len(results)} session(s) written under {options.out_dir}\n")
    return 1 if failed else 0


def write_packet_files(paths: tuple[Path, ...], out: TextIO) -> int:
    """``--pb``: the packet files of every light session under ``paths``; exit code 1 when one failed."""
    from kinetoscope.importer import pb_files  # the packet-file conversion: loaded only where it is written

    missing = [path for path in paths if not path.exists()]
    if missing:
        raise CommandError(f"{missing[0]}: no such file or directory", exit_code=2)
    found = [session for path in paths for session in layout.find_sessions(path)]
    if not found:
        raise CommandError(f"no session directory found in {', '.join(map(str, paths))}", exit_code=2)
    failed = 0
    for session in found:
        try:
            result = pb_files.write_pb_files(session)
        except (KinetoscopeError, OSError) as exc:
            out.write(f"FAILED {session}: {exc}\n")
            failed += 1
            continue
        if result.stats is None:
            out.write(f"{session}: has its packet files already\n")
            continue
        stats = result.stats
        out.write(
            f"wrote {', '.join(stats.files)} in {session}: {stats.runtime_events} runtime and "
            f"{stats.device_events} device events\n"
        )
    return 1 if failed else 0


def _report_unreadable(trace: Path, exc: FormatError, explicit: bool, out: TextIO) -> int:
    if explicit:
        out.write(f"FAILED {exc}\n")
        return 1
    out.write(f"left out {exc}\n")
    return 0


def report(result: imp.ImportResult, out: TextIO) -> None:
    """One line for the session, one per problem (up to a limit), and the rank caveat."""
    ident, stats = result.identity, result.stats
    if ident is None or result.session is None:
        return
    who = _who(ident)
    backend = f" ({ident.backend})" if ident.backend else ""
    skipped = result.problems.total
    written = (
        "light session (trace.json only; `kinetoscope import --pb` writes the packet files)"
        if stats is None
        else f"{stats.runtime_events} runtime and {stats.device_events} device events, "
        f"{len(stats.files) - 1} device file(s)"
    )
    out.write(
        f"imported {result.source} -> {result.session}: {who}{backend}; {written}"
        f"{f'; {skipped} event(s) skipped' if skipped else ''}\n"
    )
    if skipped:
        counts = ", ".join(f"{kind} {count}" for kind, count in sorted(result.problems.counts().items()))
        out.write(f"  skipped: {counts}; first ones:\n")
        for problem in result.problems.records[:_EXAMPLES_PER_FILE]:
            out.write(f"    {problem}\n")
    if not ident.rank_known:
        out.write(f"  {result.source}: no distributedInfo in the trace: imported as a single process\n")


def _who(ident: imp.Identity) -> str:
    if not ident.rank_known:
        return "single process (rank unknown)"
    of = f" of {ident.world_size}" if ident.world_size else " (world size unknown)"
    return f"rank {ident.rank}{of}"


_CLASH = ("from different processes: separate runs (verify: duplicate_rank), which ingest keeps apart as runs "
          "<name>, <name>.launch-2, ...; or import each run into its own --out directory")
_WINDOWS = ("from one process: read as its profiling windows; if they come from different runs, import each run "
            "into its own --out directory")


def _report_rank_clashes(results: list[imp.ImportResult], out: TextIO) -> None:
    for found, meaning in ((imp.rank_clashes(results), _CLASH), (imp.rank_windows(results), _WINDOWS)):
        for (rank, world_size), sources in found.items():
            names = ", ".join(str(source) for source in sources)
            out.write(f"warning: {len(sources)} traces claim rank {rank} (world size {world_size or 'unknown'}) "
                      f"{meaning}: {names}\n")  # fmt: skip
    for (rank, world_size), sources in imp.rank_windows(results).items():
        names = ", ".join(str(source) for source in sources)
        out.write(
            f"warning: {len(sources)} traces claim rank {rank} (world size {world_size or 'unknown'}) from one "
            f"process: read as its profiling windows; if they come from different runs, import each run into its "
            f"own --out directory: {names}\n"
        )


command = ImportCommand()

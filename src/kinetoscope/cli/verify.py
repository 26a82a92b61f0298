"""Check a profile tree before reading it.

Checks each session: metadata present and complete; files the recorded modes should have
produced; zero-byte, truncated, partial or altered files (against the manifest); trace.json
present beside the system files and readable; DEVICE mode without device files (and why);
compiled kernels that ran but were not copied; dropped events (kept / total per device);
memory snapshots without a rank<N> token in a multi-rank run; device work ending after the
profiler stopped (no synchronize); a window dominated by compilation (no warm-up). Across
sessions: two processes claiming one rank, and clock skew between ranks.

Exit status: 0 clean, 1 problems found, 2 nothing usable.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict
from typing import TYPE_CHECKING, TextIO

from kinetoscope.cli.environment import CATEGORIES_ENV
from kinetoscope.cli.sources import add_profile_argument, local_profile_path

if TYPE_CHECKING:
    from kinetoscope.verify.report import VerifyReport

_MARK = {"error": "ERROR  ", "problem": "PROBLEM", "note": "note   "}


class VerifyCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_profile_argument(parser, "profile_dir", "profile tree (a directory of session directories)")
        parser.add_argument("--json", action="store_true", help="print the findings as JSON")

    def run(self, args: argparse.Namespace) -> int:
        from kinetoscope.verify.report import verify

        report = verify(local_profile_path(args.profile_dir, "verify"), user_patterns=user_patterns())
        (print_json if args.json else print_text)(report, sys.stdout)
        return report.exit_code


def user_patterns() -> tuple[str, ...]:
    """The user's communication patterns (the category file ``KINETOSCOPE_CATEGORIES`` names, given to
    the command as its options), whose kernels verify pairs as collectives; the analyses are imported
    only where a file is named."""
    if not os.environ.get(CATEGORIES_ENV):
        return ()
    from kinetoscope.analysis.collectives.user_communication import patterns

    return patterns()


def print_text(report: VerifyReport, out: TextIO) -> None:
    for check in report.sessions:
        source = check.source
        scan = check.scan
        events = f"{scan.events:,} events" if scan is not None else "no trace"
        events = "memory snapshot only" if check.memory_only else events
        out.write(f"rank {source.rank:>3}  {source.session_id}  ({events})\n")
        for finding in check.findings:
            _finding(finding, out)
    if report.findings:
        out.write("across sessions\n")
        for finding in report.findings:
            _finding(finding, out)
    counts = [f.severity for f in report.all_findings()]
    out.write(
        f"{len(report.sessions)} session(s): {counts.count('error')} error(s), {counts.count('problem')} "
        f"problem(s), {counts.count('note')} note(s) -> {report.status}\n"
    )


def _finding(finding: object, out: TextIO) -> None:
    f = asdict(finding)  # type: ignore[call-overload]
    where = f" {f['file']}:" if f["file"] else ""
    out.write(f"  {_MARK[f['severity']]} [{f['check']}]{where} {f['message']}\n")
    if f["remedy"]:
        out.write(f"          -> {f['remedy']}\n")


def print_json(report: VerifyReport, out: TextIO) -> None:
    document = {
        "profile_dir": str(report.profile_dir),
        "status": report.status,
        "exit_code": report.exit_code,
        "sessions": [
            {
                "session": c.source.session_id,
                "path": str(c.source.path),
                "rank": c.source.rank,
                "events": c.scan.events if c.scan is not None else None,
                "usable": c.usable,
            }
            for c in report.sessions
        ],
        "findings": [asdict(f) for f in report.all_findings()],
    }
    json.dump(document, out, indent=1)
    out.write("\n")


command = VerifyCommand()

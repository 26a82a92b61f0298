"""Diagnose a profile: rules that name what costs time, with evidence and a remedy.

Each finding says what was seen (numbers), the events that show it (ids, time ranges and
viewer deep links), the time a fix would save (and how that was estimated), and what to do
(docs/findings.md lists every rule and threshold). Findings are ranked by estimated gain.
Override a threshold with --set RULE.THRESHOLD=VALUE; --fail-on SEVERITY exits 1 when a
finding is that severe or worse (for CI); --device NAME (or $KINETOSCOPE_DEVICE) sets the device
the roofline rules hold GEMMs to, where the trace's name is not in the table. PROFILE_DIR is
ingested first; a DATASET is read as is.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kinetoscope._errors import CommandError
from kinetoscope.cli.sources import (
    add_profile_argument,
    local_profile_path,
    opened_dataset,
    view_target,
    warm_ingest,
)
from kinetoscope.report.settings import first_ts_ns

SEVERITY_CHOICES = ("info", "low", "medium", "high")


class FindingsCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_profile_argument(parser, "path", "a profile tree or an ingested dataset")
        form = parser.add_mutually_exclusive_group()
        form.add_argument("--json", dest="output", action="store_const", const="json", help="JSON output")
        form.add_argument("--markdown", dest="output", action="store_const", const="markdown", help="Markdown output")
        parser.add_argument("--run", default=None, help="only this run of a multi-run dataset")
        parser.add_argument("--rules", default="", help="comma-separated rule ids to run (default: all)")
        parser.add_argument(
            "--set",
            dest="overrides",
            action="append",
            default=[],
            metavar="RULE.THRESHOLD=VALUE",
            help="override a rule's threshold (repeatable)",
        )
        parser.add_argument(
            "--fail-on", choices=SEVERITY_CHOICES, default=None, help="exit 1 when a finding is this severe or worse"
        )
        parser.add_argument(
            "--device", default=None, help="device of the roofline rules: a table entry or a JSON/TOML file"
        )

    def run(self, args: argparse.Namespace) -> int:
        from kinetoscope.findings import RULES, ThresholdError, at_least, parse_overrides, run_rules
        from kinetoscope.findings.document import document, write_text

        try:
            overrides = parse_overrides(args.overrides)
        except ThresholdError as exc:
            raise CommandError(str(exc)) from None
        wanted = [r.strip() for r in args.rules.split(",") if r.strip()]
        unknown = [r for r in wanted if r not in RULES]
        if unknown:
            raise CommandError(f"unknown rule {', '.join(unknown)}; choose from {', '.join(RULES)}")
        tables, t0_ns = load_tables(local_profile_path(args.path, "findings", before_import=warm_ingest), args.run)
        with device_setting(args.device):
            findings = run_rules(tables, overrides, [RULES[r] for r in wanted] or None, t0_ns=t0_ns)
        if args.output == "json":
            json.dump(document(findings), sys.stdout, indent=1)
            sys.stdout.write("\n")
        else:
            write_text(findings, sys.stdout, markdown=args.output == "markdown", target=view_target(args.path))
        failed = args.fail_on is not None and any(at_least(f.severity, args.fail_on) for f in findings)
        return 1 if failed else 0


@contextlib.contextmanager
def device_setting(device: str | None) -> Iterator[None]:
    """``--device`` (else ``$KINETOSCOPE_DEVICE``) for the rules, checked first, for this command only."""
    from kinetoscope.analysis.settings.user_options import NONE, using
    from kinetoscope.cli.environment import user_options

    with using(user_options(device=device) or NONE):
        yield


def load_tables(path: Path, run: str | None) -> tuple[dict[str, Any], int]:
    """What the rules read, and the dataset's first event time (the viewer's time origin)."""
    if not path.exists():
        raise CommandError(f"{path}: no such file or directory")

    with opened_dataset(path) as dataset:
        return rules_input(dataset, run)


def rules_input(dataset: Any, run: str | None) -> tuple[dict[str, Any], int]:
    from kinetoscope.findings import NEEDED_COLUMNS

    return dict(dataset.load(NEEDED_COLUMNS, run=run)), first_ts_ns(dataset)


command = FindingsCommand()

"""Save a run as a named baseline for CI: `kinetoscope baseline save NAME PROFILE`.

A baseline holds what `kinetoscope diff baseline:NAME NEW` needs for its verdict, comparability
check and waterfall (step times and their parts, devices, world size, compile and graph state,
dropped events, the top ops' shapes, time per step by op, shape, module and kernel), never the
traces, in one small JSON file, NAME.json, with the versions it was made with. The folder:
--dir, else $KINETOSCOPE_BASELINES, else .kinetoscope/baselines in the project around the
current directory. `baseline list` names the saved ones. See docs/compare.md for a CI recipe.

Exit status: 0; 2 for unusable input.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from kinetoscope._errors import CommandError


class BaselineCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
        save = actions.add_parser("save", help="save PROFILE as baseline NAME")
        save.add_argument("name", metavar="NAME")
        save.add_argument("profile", metavar="PROFILE", help="profile dir, dataset, trace(s), or DATASET:RUN")
        save.add_argument("--dir", default=None, help="the baselines folder")
        listing = actions.add_parser("list", help="the saved baselines")
        listing.add_argument("--dir", default=None, help="the baselines folder")

    def run(self, args: argparse.Namespace) -> int:
        from kinetoscope.analysis.compare import baselines
        from kinetoscope.cli.environment import baselines_dir

        where = baselines.folder(baselines_dir(args.dir))
        if args.action == "list":
            for path in sorted(where.glob("*.json")) if where.is_dir() else []:
                record = json.loads(path.read_text())
                steps = len(record.get("digest", {}).get("steps", {}).get("numbers", []))
                print(f"{path.stem}\t{record.get('created_utc', '')}\t{steps} steps\t{record.get('source', '')}")
            return 0
        return save(args.name, args.profile, where)


def save(name: str, profile: str, where: Path) -> int:
    from kinetoscope.analysis.compare import baselines
    from kinetoscope.cli.diff import load_run, split_spec

    try:
        baselines.path_of(name, where)
    except baselines.BaselineError as exc:
        raise CommandError(str(exc), exit_code=2) from None
    with tempfile.TemporaryDirectory(prefix="kinetoscope-baseline-") as work:
        run = load_run(profile, Path(work))
        found = run.digest
    path, spec_run = split_spec(profile)
    source = str(path.resolve()) + (f":{spec_run}" if spec_run else "")
    written = baselines.save(name, found, where, source)
    steps = len(found["steps"]["numbers"])
    print(f"baseline {name}: {written} ({steps} steps, ranks {', '.join(map(str, found['ranks']))})")
    if not steps:
        print("  no steps found: a diff against it will be inconclusive", file=sys.stderr)
    return 0


command = BaselineCommand()

"""Export a profile as one merged trace: every rank, every layer, counters and flows, all ranks on
one clock. Opens in ui.perfetto.dev (either format) and chrome://tracing (chrome).

  kinetoscope export PROFILE_DIR --format perfetto -o merged.pftrace
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

from kinetoscope._errors import CommandError
from kinetoscope.cli.sources import add_profile_argument, local_profile_path

FORMATS = ("perfetto", "chrome")


@dataclass(frozen=True)
class ExportOptions:
    path: Path
    format: str
    out: Path
    run: str | None


class ExportCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_profile_argument(parser, "path", "a profile tree (ingested first) or a dataset")
        parser.add_argument(
            "--format",
            choices=FORMATS,
            default=None,
            help="perfetto (protobuf) or chrome (JSON); default from -o's suffix (.json: chrome)",
        )
        parser.add_argument("-o", "--out", type=Path, required=True, help="output file")
        parser.add_argument("--run", default=None, help="only this run of a multi-run dataset")

    def run(self, args: argparse.Namespace) -> int:
        chosen = args.format or ("chrome" if args.out.name.endswith((".json", ".json.gz")) else "perfetto")
        return export(ExportOptions(local_profile_path(args.path, "export"), chosen, args.out, args.run))


def export(options: ExportOptions) -> int:
    from kinetoscope.query import open_dataset
    from kinetoscope.query.export_source import ExportRows
    from kinetoscope.render.export_chrome import write_chrome
    from kinetoscope.render.export_perfetto import write_perfetto
    from kinetoscope.render.export_tracks import TrackNames

    if not options.path.exists():
        raise CommandError(f"{options.path}: no such file or directory")
    with open_dataset(options.path) as dataset:
        rows = ExportRows(dataset, options.run)
        names = TrackNames(rows.tracks())
        tmp = options.out.with_name(options.out.name + ".tmp")
        with open(tmp, "wb") as out:
            if options.format == "chrome":
                counts = write_chrome(
                    out,
                    rows.first_ts_ns(),
                    names,
                    slices=rows.slices(False),
                    counters=rows.counters(),
                    flows=rows.flow_kinds(),
                )
            else:
                counts = write_perfetto(out, names, rows.slices(True), rows.counters())
        tmp.replace(options.out)
    print(
        f"{counts.describe()} from {len({t.rank for t in names.tracks})} rank(s) -> {options.out} ({options.format})",
        file=sys.stderr,
    )
    return 0


command = ExportCommand()

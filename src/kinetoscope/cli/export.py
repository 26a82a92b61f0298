"""Export a profile as one merged trace: every rank, every layer, counters and flows, all ranks on
one clock. Opens in ui.perfetto.dev (either format) and chrome://tracing (chrome).

  kinetoscope export PROFILE_DIR --format perfetto -o merged.pftrace
  kinetoscope export PROFILE_DIR -o merged.json --align-clocks   # ranks of other hosts shifted by their offset
"""

from __future__ import annotations

import argparse
import glob
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kinetoscope._errors import CommandError
from kinetoscope._processes import process_alive
from kinetoscope.cli.sources import add_profile_argument, local_profile_path, opened_dataset, warm_ingest
from kinetoscope.format.files import discard
from kinetoscope.model.scalars import as_int

if TYPE_CHECKING:
    from kinetoscope.query.dataset import Dataset

FORMATS = ("perfetto", "chrome")


@dataclass(frozen=True)
class ExportOptions:
    path: Path
    format: str
    out: Path
    run: str | None
    align_clocks: bool = False


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
        parser.add_argument(
            "--align-clocks",
            action="store_true",
            help="shift the ranks of hosts other than the lowest rank's by their clock offset, estimated from "
            "matched collective ends (the clock_offsets analysis); their processes are labelled",
        )

    def run(self, args: argparse.Namespace) -> int:
        chosen = args.format or ("chrome" if args.out.name.endswith((".json", ".json.gz")) else "perfetto")
        path = local_profile_path(args.path, "export", before_import=warm_ingest)
        return export(ExportOptions(path, chosen, args.out, args.run, args.align_clocks))


def export(options: ExportOptions) -> int:
    from kinetoscope.query.export_source import ExportRows
    from kinetoscope.render.export_chrome import write_chrome
    from kinetoscope.render.export_perfetto import write_perfetto
    from kinetoscope.render.export_tracks import TrackNames

    if not options.path.exists():
        raise CommandError(f"{options.path}: no such file or directory")
    with opened_dataset(options.path) as dataset:
        shifts = clock_shifts(dataset, options.run) if options.align_clocks else {}
        rows = ExportRows(dataset, options.run, shifts)
        names = TrackNames(rows.tracks(), shifts)
        remove_dead_temps(options.out)
        tmp = export_temp(options.out, os.getpid())
        try:
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
        finally:
            discard(tmp)  # an export stopped by an error or Ctrl-C leaves nothing
    print(
        f"{counts.describe()} from {len({t.rank for t in names.tracks})} rank(s) -> {options.out} ({options.format})",
        file=sys.stderr,
    )
    return 0


def export_temp(out: Path, pid: int) -> Path:
    """Where export ``pid`` writes ``out`` before renaming it: hidden, and named after the process."""
    return out.with_name(f".{out.name}.{pid}.tmp")


def remove_dead_temps(out: Path) -> list[Path]:
    """Remove the temporary files of exports to ``out`` whose process is gone (killed mid-write)."""
    removed = []
    prefix = f".{out.name}."
    for path in out.parent.glob(f"{glob.escape(prefix)}*.tmp"):
        pid = as_int(path.name[len(prefix) : -len(".tmp")])
        if pid is not None and path.is_file() and not path.is_symlink() and not process_alive(pid):
            discard(path)
            removed.append(path)
    return removed




def clock_shifts(dataset: Dataset, run: str | None) -> dict[tuple[str, int], int]:
    """(run, rank) -> the clock offset to take off its times, for the ranks ``clock_offsets`` applies it to."""
    from kinetoscope.analysis import ANALYSES_BY_NAME, prepared
    from kinetoscope.analysis.collectives import user_communication
    from kinetoscope.query.collective_rows import collective_tables

    collective_rows = collective_tables(dataset, run, user_communication.patterns())
    offsets = ANALYSES_BY_NAME["clock_offsets"](prepared(collective_rows))
    rows = offsets.to_pylist()
    shifts = {(str(r["run"]), int(r["rank"])): int(r["offset_ns"]) for r in rows if r["applied"]}
    for r in rows:
        where = f"rank {r['rank']} ({r['run']})"
        if r["applied"]:
            print(f"{where}: clock shifted by {-int(r['offset_ns']) / 1e6:+.3f} ms "
                  f"(± {int(r['uncertainty_ns']) / 1e6:.3f} ms, {r['samples']} samples)", file=sys.stderr)  # fmt: skip
        elif r["clock"] != "reference":
            print(f"{where}: host {r['host']} shares no matched collective with the reference host; "
                  "not shifted", file=sys.stderr)  # fmt: skip
    if not shifts:
        print("--align-clocks: no rank on another host has an estimated offset; nothing shifted", file=sys.stderr)
    return shifts


command = ExportCommand()

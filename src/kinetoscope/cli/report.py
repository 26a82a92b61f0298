"""Write one self-contained HTML report of a profile, to attach to a pull request or a ticket.

The report holds the one-screen answer of `kinetoscope summary`, the findings, the charts of the
viewer's Summary page and every analysis, each part collapsible. It opens offline in any browser:
nothing is loaded from the network, and every string from the trace is shown as text.
--redact leaves out the profile's paths, its host names and your user name.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from kinetoscope.cli.sources import add_profile_argument, local_profile_path, opened_dataset
from kinetoscope.format.files import atomic_write_bytes


class ReportCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_profile_argument(parser, "path", "a profile tree or an ingested dataset")
        parser.add_argument("-o", "--output", type=Path, required=True, help="the HTML file to write")
        parser.add_argument("--redact", action="store_true", help="leave out paths, host names and the user name")
        parser.add_argument("--title", default=None, help="the report's title (default: the profile's folder name)")

    def run(self, args: argparse.Namespace) -> int:
        from kinetoscope.viewer.pages import report_html

        path = local_profile_path(args.path, "report")
        with opened_dataset(path) as dataset:
            made = report_html.computed(dataset)  # once, for the one-screen answer and the page alike
            answer = report_html.answer(made, str(path))
            given = report_html.ReportInput(dataset, answer, args.title or f"kinetoscope report: {path.name}")
            data = report_html.report_data(given, made)
            if args.redact:
                data = report_html.redacted(data, report_html.private_strings(dataset, [str(p) for p in args.path]))
        atomic_write_bytes(args.output, report_html.page(data).encode())
        print(f"wrote {args.output}")
        return 0


command = ReportCommand()

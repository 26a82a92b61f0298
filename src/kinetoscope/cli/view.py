"""Open a profile directory or a dataset in the local web viewer.

Ingests PROFILE_DIR first when needed (incremental: unchanged sessions are not read again),
builds the viewer's index once per dataset, then serves the timeline, memory, summary and SQL
pages on http://127.0.0.1:PORT/ and opens the browser. Binding to another address (--host)
puts an access token in the printed URL; every request must carry it.
"""

from __future__ import annotations

import argparse
import time
from typing import TYPE_CHECKING

from kinetoscope.cli.locations import location
from kinetoscope.cli.sources import add_profile_argument, local_profile_path

if TYPE_CHECKING:
    from kinetoscope.query.dataset import Dataset
    from kinetoscope.viewer.index import ViewerIndex


class ViewCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_profile_argument(parser, "path", "profile directory or dataset")
        parser.add_argument("--port", type=int, default=0, help="port (default: 8700, or a free one if taken)")
        parser.add_argument("--host", default="127.0.0.1",
                            help="address to bind (default 127.0.0.1; others require the printed token)")
        parser.add_argument("--no-browser", action="store_true", help="print the URL without opening a browser")
        parser.add_argument("--rebuild-index", action="store_true", help="rebuild the viewer index even if current")
        parser.add_argument("--compare", metavar="NEW", type=location, default=None,
                            help="compare mode: PATH is BASE, NEW another profile dir or dataset (docs/compare.md)")

    def run(self, args: argparse.Namespace) -> int:
        from kinetoscope.viewer.pairing import ComparePair
        from kinetoscope.viewer.server import ServeOptions, serve
        from kinetoscope.viewer.source import resolve_dataset

        index = open_index(resolve_dataset(local_profile_path(args.path, "view")), args.rebuild_index)
        pair = None
        if args.compare is not None:
            new = open_index(resolve_dataset(local_profile_path([args.compare], "view")), args.rebuild_index)
            pair = ComparePair(index, new, " ".join(map(str, args.path)), str(args.compare))
        options = ServeOptions(host=args.host, port=args.port, open_browser=not args.no_browser)
        serve(index, options, pair=pair,
              on_ready=lambda url: print(f"kinetoscope viewer: {url}  (Ctrl+C stops)", flush=True))
        return 0


def open_index(dataset: Dataset, rebuild: bool) -> ViewerIndex:
    from kinetoscope.viewer.index import ViewerIndex

    started = time.perf_counter()
    index = ViewerIndex.open(dataset, rebuild=rebuild)
    print(f"dataset {dataset.path}: {index.event_count:,} events, index ready in "
          f"{time.perf_counter() - started:.1f} s", flush=True)
    return index


command = ViewCommand()

"""Open a profile directory or a dataset in the local web viewer.

Listens at once and prints the URL; then ingests PROFILE_DIR when needed (incremental: unchanged
sessions are not read again) and builds the viewer's index once per dataset, while the page shows
the progress (``viewer.serving.loading``). Serves the timeline, memory, summary and SQL pages on
http://127.0.0.1:PORT/ and opens the browser. Each printed link opens the viewer once, in one
browser (a one-time code, `viewer.serving.access`); the browser is given a private launch page, so the
code is in no process's arguments.
"""

from __future__ import annotations

import argparse
import contextvars
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from kinetoscope._errors import CommandError
from kinetoscope._process_end import end_process
from kinetoscope.cli.locations import location
from kinetoscope.cli.sources import add_profile_argument, local_profile_path
from kinetoscope.format.viewer_links import timeline_query

if TYPE_CHECKING:
    from starlette.applications import Starlette

    from kinetoscope.ingest.running.executors import Reading
    from kinetoscope.ingest.running.pipeline import Progress
    from kinetoscope.query.dataset import Dataset
    from kinetoscope.viewer.indexing.index import ViewerIndex
    from kinetoscope.viewer.serving.access import Access
    from kinetoscope.viewer.serving.loading import Preparation


class ViewCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_profile_argument(parser, "path", "profile directory or dataset")
        parser.add_argument("--port", type=int, default=0, help="port (default: 8700, or a free one if taken)")
        parser.add_argument("--host", default="127.0.0.1",
                            help="address to bind (default 127.0.0.1; any address needs a printed link)")
        parser.add_argument("--no-browser", action="store_true",
                            help="print a link (works once) without opening a browser")
        parser.add_argument("--rebuild-index", action="store_true", help="rebuild the viewer index even if current")
        parser.add_argument("--preview-mb", type=float, default=10, metavar="MB",
                            help="raw traces over 3x this size: their first MB shown meanwhile (default 10; 0: none)")
        parser.add_argument("--compare", metavar="NEW", type=location, default=None,
                            help="compare mode: PATH is BASE, NEW another profile dir or dataset (docs/compare.md)")
        parser.add_argument("--at", type=time_range, default=None, metavar="START[-END]",
                            help="open the timeline on this time range: ms from the dataset's first event, as the "
                            "viewer shows them (START alone: 1 ms either side); the findings' evidence says it")
        parser.add_argument("--event", type=int, default=None, metavar="ID",
                            help="open the timeline with this event selected (an event id, as the findings give)")

    def run(self, args: argparse.Namespace) -> int:
        from kinetoscope.cli.view_preview import start_preview
        from kinetoscope.viewer.serving.app import create_app
        from kinetoscope.viewer.serving.loading import Preparation, create_loading_app
        from kinetoscope.viewer.serving.server import ServeOptions, serve_app

        if args.compare is not None and (args.at is not None or args.event is not None):
            raise CommandError("--at and --event open the timeline: not with --compare")
        for given in [*args.path, *([args.compare] if args.compare is not None else [])]:
            if isinstance(given, str) or not given.exists():  # said at once, before listening
                local_profile_path([given], "view")
            if isinstance(given, Path) and given.is_file() and given.suffix == ".pickle":
                raise CommandError(
                    f"{given}: a memory snapshot alone is not a profile; view the profile it belongs to (its "
                    "Memory page shows the snapshot: name it memory_snapshot_rank<N>.pickle beside the traces)")
        preparation = Preparation()

        def make_app(access: Access, hosts: frozenset[str] | None) -> Starlette:
            if args.compare is None and args.preview_mb > 0:  # first: the whole's import waits for it
                start_preview(args.path, int(args.preview_mb * 1e6), preparation,
                              lambda index: create_app(index, access=access, allowed_hosts=hosts))
            # in this context: the analyses' settings the command read (cli.environment) reach the pages
            thread = threading.Thread(target=contextvars.copy_context().run, daemon=True, name="prepare-dataset",
                                      args=(preparation.run, lambda: prepared_app(args, preparation, access, hosts)))
            thread.start()
            return create_loading_app(preparation, access=access, allowed_hosts=hosts)

        options = ServeOptions(host=args.host, port=args.port, open_browser=not args.no_browser)
        try:
            serve_app(make_app, options, page="compare" if args.compare is not None else None,
                      place=place_query(args.at, args.event),
                      on_ready=lambda url: print(f"kinetoscope viewer: {url}  (this link works once; Ctrl+C stops)",
                                                 flush=True))
        except KeyboardInterrupt:
            return leave(130)
        return leave(0)


def leave(status: int) -> int:
    """``status``, or, while helper threads still run (the dataset's preparation, its warm-up of
    summaries), end the process now with it: what Python runs at exit runs, then the native teardown,
    which aborted now and then under a thread still inside DuckDB or Arrow (SIGABRT, "exception not
    rethrown", 2 runs in 11 of a Ctrl+C just after "index ready"), is skipped."""
    helpers = [t for t in threading.enumerate() if t is not threading.main_thread() and t.is_alive()]
    if not helpers:
        return status
    end_process(status)


NS_PER_MS = 1_000_000
LONE_TIME_MARGIN_NS = NS_PER_MS  # a START given alone: this much either side of it


def time_range(text: str) -> tuple[int, int]:
    """``START[-END]`` in ms from the dataset's first event -> (start_ns, end_ns)."""
    first, sep, last = text.strip().removesuffix("ms").partition("-")
    try:
        start_ns = round(float(first) * NS_PER_MS)
        end_ns = round(float(last) * NS_PER_MS) if sep else start_ns
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected START[-END] in ms, such as 12.5-14.25") from None
    if start_ns < 0 or end_ns < start_ns:
        raise argparse.ArgumentTypeError(f"{text!r}: expected 0 <= START <= END")
    if not sep:
        return max(start_ns - LONE_TIME_MARGIN_NS, 0), start_ns + LONE_TIME_MARGIN_NS
    return start_ns, end_ns


def place_query(at: tuple[int, int] | None, event: int | None) -> str:
    """The viewer's deep link query to the timeline at ``at`` with ``event`` selected (``format.viewer_links``);
    ``""`` for neither."""
    return timeline_query(at, event)


def prepared_app(args: argparse.Namespace, preparation: Preparation, access: Access,
                 hosts: frozenset[str] | None) -> Starlette:
    """Imports, ingests and indexes what `args` name, reporting each stage; the dataset's app."""
    from kinetoscope.viewer.serving.app import create_app
    from kinetoscope.viewer.serving.pairing import ComparePair

    index = open_index(prepared_dataset(args.path, preparation), args.rebuild_index, preparation)
    pair = None
    if args.compare is not None:
        new = open_index(prepared_dataset([args.compare], preparation), args.rebuild_index, preparation)
        pair = ComparePair(index, new, " ".join(map(str, args.path)), str(args.compare))
    return create_app(index, access=access, allowed_hosts=hosts, pair=pair)


def prepared_dataset(paths: list[Path | str], preparation: Preparation) -> Dataset:
    from kinetoscope.viewer.indexing.source import resolve_dataset

    def say(stage: str) -> Callable[[str], None]:
        def note(line: str) -> None:
            print(line, file=sys.stderr, flush=True)
            preparation.report(stage, message=line.strip())
        return note

    preparation.report("import", message="looking for traces")
    # the import's heavy work waits for the preview, which then has the CPU to itself
    profile = local_profile_path(paths, "view", say("import"), lambda _traces: wait_for_preview(preparation))
    preparation.report("ingest", message=f"reading {profile}")
    sessions, reading = _ingest_reports(preparation)
    return resolve_dataset(profile, say=say("ingest"), progress=sessions, reading=reading)


def _ingest_reports(preparation: Preparation) -> tuple[Progress, Reading]:
    """The ingest stage's reports: sessions as they end, and the bytes of the one being read here,
    as a share of all the sessions (per mille, unit %), so that the bar only moves on."""
    from kinetoscope.cli.progress import Tally, mib_read

    tally = Tally()

    def sessions(done: int, total: int, session: str) -> None:
        tally.ended(done, total)
        said = f"ingested {done} of {total} session(s): {session}" if session else f"ingesting {total} session(s)"
        preparation.report("ingest", done, total, said)

    def reading(session: str, read: int, size: int) -> None:
        total = max(tally.total, tally.done + 1)
        said = f"reading {session} ({tally.done + 1} of {total}): {mib_read(read, size)}"
        preparation.report("ingest", round(tally.through(read, size) * 1000), total * 1000, said, unit="%")

    return sessions, reading


def wait_for_preview(preparation: Preparation) -> None:
    """Holds the whole's import until the preview answers (or fails, or none is made)."""
    from kinetoscope.cli.view_preview import HEAD_START_LIMIT_S

    started = time.perf_counter()
    if preparation.wait_for_preview(0):
        return
    preparation.report("import", message="waiting for the preview of the first events")
    over = preparation.wait_for_preview(HEAD_START_LIMIT_S)
    waited_s = time.perf_counter() - started
    print(f"whole trace's import {'held' if over else 'waited no longer'} {waited_s:.1f} s for the preview",
          file=sys.stderr, flush=True)


def open_index(dataset: Dataset, rebuild: bool, preparation: Preparation | None = None) -> ViewerIndex:
    from kinetoscope.viewer.indexing import clock_cache
    from kinetoscope.viewer.indexing.index import ViewerIndex

    def progress(done: int, total: int, step: str) -> None:
        if preparation is not None:
            preparation.report("index", done, total, step, unit="%")

    if preparation is not None:
        preparation.report("index", message=f"building the viewer index of {dataset.path}")
    started = time.perf_counter()
    index = ViewerIndex.open(dataset, rebuild=rebuild, progress=progress)
    clock_cache.clocks(index)  # kept beside the index, so the first page need not wait for them
    print(f"dataset {dataset.path}: {index.event_count:,} events, index ready in "
          f"{time.perf_counter() - started:.1f} s", flush=True)
    return index


command = ViewCommand()

"""Import throughput: MB of JSON per second, against a parse-only pass with the fastest decoder here.

Runs, in one process and on one core, medians of several repeats of:

- parse-only: the whole file decoded in one call by the fastest general JSON decoder installed
  (msgspec or orjson, whichever is faster on this file), with the garbage collector paused: the
  limit for any reader that builds Python values for the events;
- readers: ``iter_trace_events`` (dicts) and ``iter_trace_records`` (records) streaming every
  event in batches;
- import: ``kinetoscope import`` of the file (copy, reader, conversion to the system and
  device traces, trace_info with hashes).

Usage: python benchmarks/import_throughput.py [--mb 50] [--repeats 3] [--trace FILE]
The generated trace is written under /tmp and removed afterwards.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import json
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from trace_gen import write_trace

from kinetoscope.format.kineto import kineto_json
from kinetoscope.format.problems import ProblemLog
from kinetoscope.importer import trace_import as imp

GOAL_MB_PER_S = 50


def decoders() -> dict[str, Callable[[bytes], object]]:
    """The general JSON decoders installed, by name."""
    found: dict[str, Callable[[bytes], object]] = {}
    for name in ("msgspec", "orjson"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        found[name] = module.json.decode if name == "msgspec" else module.loads
    found["json"] = json.loads
    return found


def parse_only(path: Path, loads: Callable[[bytes], object]) -> None:
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        loads(path.read_bytes())
    finally:
        if was_enabled:
            gc.enable()


def read_all(path: Path) -> None:
    for _ in kineto_json.iter_trace_events(path, ProblemLog()):
        pass


def read_records(path: Path) -> None:
    for _ in kineto_json.iter_trace_records(path, ProblemLog()):
        pass


def import_once(path: Path, out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    imp.import_trace(path, imp.ImportOptions(out_dir=out))


def median_seconds(run: Callable[[], None], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=float, default=50, help="size of the generated trace")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--trace", type=Path, help="use this trace instead of a generated one")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir="/tmp") as tmp:
        path = args.trace or Path(tmp) / "trace.json"
        if args.trace is None:
            write_trace(path, int(args.mb * 1e6))
        size_mb = path.stat().st_size / 1e6
        parsed = {
            name: median_seconds(lambda loads=loads: parse_only(path, loads), args.repeats)
            for name, loads in decoders().items()
            if name != "json" or len(decoders()) == 1
        }
        decoder, limit = min(parsed.items(), key=lambda item: item[1])
        reader = median_seconds(lambda: read_all(path), args.repeats)
        records = median_seconds(lambda: read_records(path), args.repeats)
        full = median_seconds(lambda: import_once(path, Path(tmp) / "out"), args.repeats)
    print(f"trace: {size_mb:.1f} MB; medians of {args.repeats}")
    for name, seconds in sorted(parsed.items(), key=lambda item: item[1]):
        print(f"parse-only ({name}): {size_mb / seconds:7.1f} MB/s" + ("   (the limit)" if name == decoder else ""))
    print(f"reader (dicts):    {size_mb / reader:7.1f} MB/s   {reader / limit:.2f}x the parse-only time")
    print(f"reader (records):  {size_mb / records:7.1f} MB/s   {records / limit:.2f}x the parse-only time")
    print(f"import:            {size_mb / full:7.1f} MB/s   {full / limit:.2f}x the parse-only time")
    verdict = "met" if size_mb / full >= GOAL_MB_PER_S else "not met"
    print(f"goal: import >= {GOAL_MB_PER_S} MB/s on one core: {verdict}")


if __name__ == "__main__":
    main()

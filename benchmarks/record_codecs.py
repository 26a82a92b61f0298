"""Ingest with records decoded by msgspec against records made from dicts, side by side.

``format/kineto/trace_records.py`` reads a trace's events into records one of two ways: with
msgspec installed (the explorer's extra), a span of the event array is decoded straight into
records and the args are copied as text; without it (an install with only the capture's
dependencies), each event is decoded into a dict and a record is made from it. Both give the
same dataset (``tests/ingest/test_golden_digests.py`` runs both).

Each trace is imported once into a session directory; then, for every repeat, the session is
ingested in this process (``--jobs 1``) with each codec, alternately, so both see the same load.
Reported: CPU seconds of this process (``time.process_time``: the ingest runs in one thread)
for each codec, medians of the repeats, their ratio, and whether the two datasets are identical
column by column (``tests/ingest/digest.py``).

Usage: PYTHONPATH=src python benchmarks/record_codecs.py [--repeats 3] [TRACE ...]
Without traces, HTA's ``df_index_resolver.json.gz`` of the public corpus is used.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kinetoscope.format.kineto import trace_records  # noqa: E402
from kinetoscope.importer.trace_import import ImportOptions, import_trace  # noqa: E402
from kinetoscope.ingest.running.pipeline import IngestOptions, ingest  # noqa: E402
from tests.ingest.digest import dataset_digest, differences  # noqa: E402

CORPUS = REPO.parent / "shared" / "datasets" / "public-traces"
DEFAULT_TRACE = CORPUS / "hta" / "tests" / "data" / "df_index_resolver" / "df_index_resolver.json.gz"
CODECS = ("msgspec", "dicts")


@contextmanager
def using(kind: str) -> Iterator[None]:
    """``trace_records.codec()`` gives a fresh codec of ``kind`` while the block runs."""
    chosen = trace_records.RecordCodec()
    if kind == "dicts":
        chosen.decode_span = None
    elif chosen.decode_span is None:
        raise SystemExit("msgspec is not installed: nothing to compare")
    original = trace_records.codec
    trace_records.codec = lambda: chosen  # type: ignore[assignment]
    try:
        yield
    finally:
        trace_records.codec = original  # type: ignore[assignment]


def ingest_cpu_s(sessions: Path, out: Path, kind: str) -> float:
    shutil.rmtree(out, ignore_errors=True)
    with using(kind):
        start = time.process_time()
        ingest(IngestOptions(profile_dir=sessions, out=out, jobs=1))
        return time.process_time() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kinetoscope-record-codecs-") as scratch:
        for trace in args.traces or [DEFAULT_TRACE]:
            work = Path(scratch) / trace.name
            sessions = work / "sessions"
            import_trace(trace, ImportOptions(out_dir=sessions))
            size_mb = sum(p.stat().st_size for p in sessions.rglob("trace.json")) / 1e6
            cpu_s: dict[str, list[float]] = {kind: [] for kind in CODECS}
            for kind in CODECS:  # one unmeasured run each: caches and decoders warm
                ingest_cpu_s(sessions, work / kind, kind)
            for _ in range(args.repeats):
                for kind in CODECS:
                    cpu_s[kind].append(ingest_cpu_s(sessions, work / kind, kind))
            fast, slow = (statistics.median(cpu_s[kind]) for kind in CODECS)
            print(f"{trace.name}: {size_mb:.1f} MB of trace.json, CPU seconds in process, medians of {args.repeats}")
            print(f"  records by msgspec:   {fast:.2f} s ({size_mb / fast:.1f} MB/s)")
            print(f"  records from dicts:   {slow:.2f} s ({size_mb / slow:.1f} MB/s)")
            print(f"  dicts / msgspec: {slow / fast:.2f}")
            found = differences(dataset_digest(work / "msgspec"), dataset_digest(work / "dicts"))
            print("  datasets identical" if not found else f"  DATASETS DIFFER: {found}")


if __name__ == "__main__":
    main()

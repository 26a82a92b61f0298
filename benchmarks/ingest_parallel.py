"""Sessions ingested one after another by one process against the same sessions ingested by worker processes.

The traces are imported once into one profile tree (one session each); then, for every
repeat, ``kinetoscope ingest TREE --jobs 1`` (this process alone) and ``--jobs N`` (N processes,
one session at a time each: ``ingest/running/executors.py``) run as fresh processes,
alternately, so both see the same load. Reported per side: wall seconds, CPU seconds of the
process tree (user + sys, from ``wait4``, which counts the workers the process waited for),
peak RSS of the process tree (sampled every 10 ms), medians of the repeats with their range;
then the wall and CPU ratios, and the load average before and after. The two datasets are
compared column by column (``tests/ingest/digest.py``): they must be identical.

Usage: PYTHONPATH=src python benchmarks/ingest_parallel.py [--jobs 4] [--repeats 5] [--ranks 4]
       [--mb-per-rank 8] [TRACE ...]
Without traces, ``--ranks`` rank traces of ``--mb-per-rank`` MB are generated
(``gen_multirank_trace.py``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from _common import byte_compiled, load_average, measured_process  # noqa: E402

from kinetoscope.importer.trace_import import ImportOptions, import_trace  # noqa: E402
from tests.ingest.digest import dataset_digest, differences  # noqa: E402

GENERATOR = REPO / "benchmarks" / "gen_multirank_trace.py"


@dataclass
class Side:
    jobs: int
    wall_s: list[float] = field(default_factory=list)
    cpu_s: list[float] = field(default_factory=list)
    peak_bytes: list[int] = field(default_factory=list)


def run_ingest(sessions: Path, out: Path, jobs: int) -> tuple[float, float, int]:
    """(wall s, CPU s of the process tree, peak RSS bytes of the tree) of one ingest process."""
    shutil.rmtree(out, ignore_errors=True)
    argv = [sys.executable, "-m", "kinetoscope", "ingest", str(sessions), "--out", str(out), "--jobs", str(jobs)]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    done = measured_process(argv, env)
    if done.returncode not in (0, 1):  # 1: partial (warnings), still a dataset
        raise RuntimeError(f"ingest --jobs {jobs} failed: {done.stderr.strip()[-600:]}")
    return done.wall_s, done.cpu_s, done.peak_bytes


def spread(values: list[float], unit: str, digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} {unit} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def report(name: str, size_bytes: int, serial: Side, parallel: Side) -> None:
    mb = size_bytes / 1e6
    print(f"\n{name}: {mb:.1f} MB of trace.json, medians of {len(serial.wall_s)} (range)")
    for side in (serial, parallel):
        wall, cpu = statistics.median(side.wall_s), statistics.median(side.cpu_s)
        print(
            f"  --jobs {side.jobs}: wall {spread(side.wall_s, 's')}, CPU {spread(side.cpu_s, 's')}, "
            f"{mb / wall:.1f} MB/s wall, {mb / cpu:.1f} MB/s per CPU s, "
            f"peak RSS {statistics.median(side.peak_bytes) / 2**20:.0f} MiB"
        )
    wall_ratio = statistics.median(serial.wall_s) / statistics.median(parallel.wall_s)
    cpu_ratio = statistics.median(parallel.cpu_s) / statistics.median(serial.cpu_s)
    print(f"  wall: {wall_ratio:.2f}x faster with --jobs {parallel.jobs}; CPU: {cpu_ratio:.2f}x the serial CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 4))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ranks", type=int, default=4)
    parser.add_argument("--mb-per-rank", type=float, default=8.0)
    args = parser.parse_args()
    byte_compiled(sys.executable, REPO / "src")
    print(f"load average {load_average()} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="kinetoscope-ingest-parallel-") as scratch:
        work = Path(scratch)
        traces = args.traces or generated(work / "traces", args.ranks, args.mb_per_rank)
        sessions = work / "sessions"
        for trace in traces:
            import_trace(trace, ImportOptions(out_dir=sessions))
        size_bytes = sum(p.stat().st_size for p in sessions.rglob("trace.json"))
        serial, parallel = Side(1), Side(args.jobs)
        for side in (serial, parallel):  # one unmeasured run each: caches warm
            run_ingest(sessions, work / f"out{side.jobs}", side.jobs)
        for _ in range(args.repeats):
            for side in (serial, parallel):
                wall, cpu, peak = run_ingest(sessions, work / f"out{side.jobs}", side.jobs)
                side.wall_s.append(wall)
                side.cpu_s.append(cpu)
                side.peak_bytes.append(peak)
        report(f"{len(traces)} sessions", size_bytes, serial, parallel)
        found = differences(dataset_digest(work / f"out{args.jobs}"), dataset_digest(work / "out1"))
        print("  datasets identical" if not found else f"  DATASETS DIFFER: {found}")
    print(f"load average {load_average()} on {os.cpu_count()} CPUs")


def generated(folder: Path, ranks: int, mb_per_rank: float) -> list[Path]:
    """``ranks`` rank traces of about ``mb_per_rank`` MB each, written by ``gen_multirank_trace.py``."""
    argv = [sys.executable, str(GENERATOR), str(folder), "--ranks", str(ranks), "--mb-per-rank", str(mb_per_rank)]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return sorted(p for p in folder.iterdir() if p.is_file())


if __name__ == "__main__":
    main()

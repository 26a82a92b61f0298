"""Ingest speed and memory against Holistic Trace Analysis, and summary latency.

Both tools read the same traces in one run of this script, each in a fresh process per
repeat (so neither benefits from a warm cache of the other): HTA's ``TraceAnalysis(trace_dir)``
load against ``kinetoscope ingest`` into a new dataset (by default, and with ``--jobs 1``).
Times are measured inside the process around the load/ingest call (module imports excluded
for both, worker start-up included for both); peak memory is the largest sum of
resident memory over the process and all its children (HTA and ingest both use worker
processes), sampled every 5 ms. Medians of ``--repeats`` runs; the ratios are printed.

Floors, on one core: reading every event with the reader ingest uses, plus writing the
dataset's files again from memory: no ingest of this design can take less, so HTA's time over
it bounds the speed-up one core can give. And the memory of a process that has imported
what ingest imports and read nothing.

Inputs: the 8-rank DLRM set of the public trace corpus, and a generated multi-rank trace
set of ``--generated-mb`` MB (written under /tmp). Traces are turned into session directories
with ``kinetoscope import`` once, before timing (its time is printed too).

Needs HTA: ``pip install -e '.[bench]'`` (or ``pip install holistictraceanalysis``).

  PYTHONPATH=src python benchmarks/explorer_speed.py [--generated-mb 220] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
DLRM = (
    REPO.parent / "shared" / "datasets" / "public-traces" / "param" / "et_replay" / "tests" / "inputs" / "dlrm_kineto"
)
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import tree_rss  # noqa: E402

HTA_LOAD = """
import json, logging, sys, time
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
start = time.perf_counter()
TraceAnalysis(trace_dir=sys.argv[1])
print(json.dumps({"seconds": time.perf_counter() - start}))
"""
# The floors of ingest's design on one core: reading every event of every session with the
# reader ingest uses (records, the fastest way to get the events into Python here), and writing
# the dataset's files again from memory; and the memory of a process that has imported what
# ingest imports and read nothing.
READ_FLOOR = """
import gc, json, sys, time
from pathlib import Path
from kinetoscope.format.kineto.kineto_json import iter_trace_records
from kinetoscope.format.problems import ProblemLog
traces = sorted(Path(sys.argv[1]).rglob("trace.json"))
gc.disable()
start = time.perf_counter()
for trace in traces:
    for _ in iter_trace_records(trace, ProblemLog()):
        pass
print(json.dumps({"seconds": time.perf_counter() - start}))
"""
WRITE_FLOOR = """
import json, sys, tempfile, time
from pathlib import Path
import pyarrow.parquet as pq
from kinetoscope.dataset.directory import write_part
dataset = Path(sys.argv[1])
parts = [(p.relative_to(dataset), pq.read_table(p)) for p in sorted(dataset.rglob("*.parquet"))]
with tempfile.TemporaryDirectory() as out:
    start = time.perf_counter()
    for name, table in parts:
        write_part(Path(out) / name, table)
    print(json.dumps({"seconds": time.perf_counter() - start}))
"""
IMPORTS_ONLY = """
import json, time
import pyarrow
from kinetoscope.ingest import IngestOptions, ingest
pyarrow.array([0])
time.sleep(0.2)
print(json.dumps({"seconds": 0.0}))
"""
OUR_INGEST = """
import json, sys, time
from pathlib import Path
import pyarrow
from kinetoscope.ingest import IngestOptions, ingest
pyarrow.array([0])  # pyarrow imports pandas (when installed) on first use: an import, excluded as HTA's are
start = time.perf_counter()
report = ingest(IngestOptions(profile_dir=Path(sys.argv[1]), out=Path(sys.argv[2]), jobs=int(sys.argv[3])))
print(json.dumps({"seconds": time.perf_counter() - start, "status": report.status}))
"""


# The interpreter that runs kinetoscope's side (``--ours-python``): HTA needs pandas, and pyarrow
# imports pandas whenever it is installed (about 55 MiB and 0.2 s), which an install of
# kinetoscope alone does not have. Default: this interpreter, like HTA.
OURS = [sys.executable]


def measure(args: list[str], python: str | None = None) -> tuple[float, int, float]:
    """(seconds reported by the process, peak RSS of its tree in bytes, wall seconds of the process)."""
    started = time.perf_counter()
    child = subprocess.Popen(
        [python or sys.executable, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**_env(), "PYTHONPATH": str(REPO / "src")},
    )
    peak = 0
    process = psutil.Process(child.pid)
    while child.poll() is None:
        peak = max(peak, tree_rss(process))
        time.sleep(0.005)
    wall = time.perf_counter() - started
    out = child.stdout.read() if child.stdout else ""
    if child.returncode != 0:
        raise RuntimeError(f"{args[:2]} failed with exit code {child.returncode}")
    return float(json.loads(out.strip().splitlines()[-1])["seconds"]), peak, wall


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)



def _median(runs: list[tuple[float, int, float]], field: int) -> float:
    return statistics.median(r[field] for r in runs)


def compare(name: str, traces: Path, sessions: Path, repeats: int) -> None:
    """HTA, then kinetoscope with its default workers and with one process (the memory-lean setting)."""
    runs: dict[str, list[tuple[float, int, float]]] = {"hta": [], "0": [], "1": []}
    kept = Path(tempfile.mkdtemp(prefix="kinetoscope-bench-kept-"))
    for _ in range(repeats):
        runs["hta"].append(measure(["-c", HTA_LOAD, str(traces)]))
        for jobs in ("0", "1"):
            out = Path(tempfile.mkdtemp(prefix="kinetoscope-bench-ds-"))
            runs[jobs].append(measure(["-c", OUR_INGEST, str(sessions), str(out / "ds"), jobs], OURS[0]))
            shutil.rmtree(kept, ignore_errors=True)
            shutil.move(str(out / "ds"), kept)
            shutil.rmtree(out, ignore_errors=True)
    read = [measure(["-c", READ_FLOOR, str(sessions)], OURS[0]) for _ in range(repeats)]
    write = [measure(["-c", WRITE_FLOOR, str(kept)], OURS[0]) for _ in range(repeats)]
    shutil.rmtree(kept, ignore_errors=True)
    imports_only = [measure(["-c", IMPORTS_ONLY], OURS[0]) for _ in range(repeats)]
    size_mb = sum(p.stat().st_size for p in traces.iterdir() if p.is_file()) / 1e6
    print(f"\n{name}: {size_mb:.0f} MB of traces, medians of {repeats}")
    hta_s, hta_mem = _median(runs["hta"], 0), _median(runs["hta"], 1)
    print(f"  {'HTA TraceAnalysis load':<30} {hta_s:8.2f} s   peak {hta_mem / 2**20:6.0f} MiB")
    read_s, write_s, base_mem = _median(read, 0), _median(write, 0), _median(imports_only, 1)
    print(
        f"  {'floor: read + write only':<30} {read_s + write_s:8.2f} s   (one core: reading the events "
        f"{read_s:.2f} s, writing the dataset's files {write_s:.2f} s; HTA / floor = {hta_s / (read_s + write_s):.1f}x)"
    )
    print(
        f"  {'floor: ingest imports only':<30} {'':8}     peak {base_mem / 2**20:6.0f} MiB "
        f"  ({base_mem / hta_mem:.2f} of HTA's peak before reading anything)"
    )
    for jobs, title in (("0", "kinetoscope ingest (default)"), ("1", "kinetoscope ingest --jobs 1")):
        seconds, memory = _median(runs[jobs], 0), _median(runs[jobs], 1)
        print(
            f"  {title:<30} {seconds:8.2f} s   peak {memory / 2**20:6.0f} MiB   speed-up {hta_s / seconds:5.1f}x "
            f"(goal >= 20x)   memory ratio {memory / hta_mem:.2f} (goal <= 0.25)"
        )


def import_sessions(traces: Path, out: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "kinetoscope", "import", str(traces), "--out", str(out)],
        check=True,
        stdout=subprocess.DEVNULL,
        env={**_env(), "PYTHONPATH": str(REPO / "src")},
    )
    return time.perf_counter() - start


def summary_latency(sessions: Path, repeats: int) -> None:
    dataset = Path(tempfile.mkdtemp(prefix="kinetoscope-bench-summary-")) / "ds"
    subprocess.run(
        [sys.executable, "-m", "kinetoscope", "ingest", str(sessions), "--out", str(dataset), "--quiet"],
        check=True,
        env={**_env(), "PYTHONPATH": str(REPO / "src")},
    )
    walls = []
    for _ in range(repeats):
        start = time.perf_counter()
        subprocess.run(
            [OURS[0], "-m", "kinetoscope", "summary", str(dataset)],
            check=True,
            stdout=subprocess.DEVNULL,
            env={**_env(), "PYTHONPATH": str(REPO / "src")},
        )
        walls.append(time.perf_counter() - start)
    print(
        f"\nsummary of the ingested 8-rank dataset: {statistics.median(walls):.2f} s median over {repeats} "
        f"(whole command, interpreter start included; goal <= 1 s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dlrm", type=Path, default=DLRM, help="directory of the 8 DLRM rank traces")
    parser.add_argument("--generated-mb", type=float, default=220.0, help="size of the generated set (0: skip)")
    parser.add_argument("--ranks", type=int, default=4, help="ranks of the generated set")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--ours-python",
        default=sys.executable,
        help="interpreter for kinetoscope's side, e.g. the README set-up's .venv/bin/python (no pandas)",
    )
    args = parser.parse_args()
    OURS[0] = args.ours_python
    print(f"HTA runs with {sys.executable}; kinetoscope with {OURS[0]}")
    from gen_multirank_trace import generate

    work = Path(tempfile.mkdtemp(prefix="kinetoscope-bench-"))
    try:
        sets = [("DLRM, 8 ranks (public corpus)", args.dlrm)]
        if args.generated_mb > 0:
            generated = work / "generated"
            generate(generated, args.ranks, args.generated_mb / args.ranks)
            sets.append((f"generated, {args.ranks} ranks", generated))
        for name, traces in sets:
            sessions = work / f"sessions-{len(list(work.iterdir()))}"
            seconds = import_sessions(traces, sessions)
            print(f"\n(import of {name} into session directories, once: {seconds:.2f} s)")
            compare(name, traces, sessions, args.repeats)
            if traces == args.dlrm:
                summary_latency(sessions, max(args.repeats, 5))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

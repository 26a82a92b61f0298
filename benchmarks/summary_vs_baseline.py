"""``kinetoscope summary --json`` on one large ingested dataset: this checkout against a baseline checkout.

Generates a multi-rank trace set (``gen_multirank_trace.py``), imports and ingests it once with
this checkout, then runs ``summary --json`` as a whole process with each side's ``src``,
alternating, several repeats, and prints per side the median wall and CPU time (user + system;
on a shared machine CPU time varies less than wall time), the ratios (ours / baseline) and the
peak RSS of the child. It also checks that both sides print the same document, and prints the CPU
time of each phase of one summary with this checkout (imports, reading, preparing, rules,
analyses; the JSON itself is the rest). Usage::

    git worktree add --detach /tmp/baseline <commit>
    python benchmarks/summary_vs_baseline.py --baseline /tmp/baseline [--ranks 8 --mb-per-rank 34]
        [--repeats 5] [--dataset DIR]

8 ranks of 34 MB are about 1.14 M events; ``--dataset`` reuses a dataset ingested before.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import byte_compiled
from commands_vs_baseline import run  # (wall s, CPU s, peak RSS bytes) of one kinetoscope process

REPO = Path(__file__).resolve().parents[1]
OURS = REPO / "src"


def make_dataset(scratch: Path, ranks: int, mb_per_rank: float) -> Path:
    """Generate, import and ingest (with this checkout) a trace set; the dataset's path."""
    traces, sessions, dataset = scratch / "traces", scratch / "sessions", scratch / "dataset"
    generate = [sys.executable, str(REPO / "benchmarks" / "gen_multirank_trace.py"), str(traces)]
    subprocess.run([*generate, "--ranks", str(ranks), "--mb-per-rank", str(mb_per_rank)], check=True)
    run(OURS, ["import", str(traces), "--out", str(sessions)])
    run(OURS, ["ingest", str(sessions), "--out", str(dataset)])
    return dataset


def same_output(baseline: Path, dataset: Path) -> bool:
    """Whether both sides print the same ``summary --json`` document."""
    outputs = []
    for src in (baseline / "src", OURS):
        env = {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"}
        argv = [sys.executable, "-m", "kinetoscope", "summary", str(dataset), "--json"]
        outputs.append(subprocess.run(argv, env=env, capture_output=True, check=True).stdout)
    return outputs[0] == outputs[1]


_PHASES = """
import sys, time
clock = time.process_time
start = clock()
import pyarrow as pa
from kinetoscope.analysis import ANALYSES, IdleOptions, TopOptions, needed_columns, prepared, run_all
from kinetoscope.analysis._tables.reuse import reusing
from kinetoscope.report import runner
from kinetoscope.report.settings import ReportOptions
from kinetoscope.analysis.tables import reusing
from kinetoscope.cli import summary
from kinetoscope.report.opening import open_dataset
marks = [("imports", clock())]
pa.set_memory_pool(pa.system_memory_pool())
options = ReportOptions()
with reusing(), open_dataset(sys.argv[1]) as dataset:
    loaded = dataset.load(needed_columns(ANALYSES))
    marks.append(("read the dataset", clock()))
    tables = prepared(loaded)
    marks.append(("prepare (input shapes, one chunk)", clock()))
    runner._findings(tables, runner._time_origin(dataset, tables, options))
    marks.append(("findings rules", clock()))
    run_all(tables, (TopOptions(top=10), IdleOptions()))
    marks.append(("analyses", clock()))
last = start
for name, at in marks:
    print(f"  {name:34s} {at - last:5.2f} s CPU")
    last = at
"""


def phases(src: Path, dataset: Path) -> None:
    """CPU time of each phase of one summary in one process (``src`` first on the path)."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    print("phases (this checkout, one run, the rules and analyses one after another, CPU s of the process):")
    subprocess.run([sys.executable, "-c", _PHASES, str(dataset)], env=env, check=True)


def events_of(dataset: Path) -> int:
    import pyarrow.dataset as pads

    return int(pads.dataset(str(dataset / "events"), format="parquet").count_rows())


def compare(baseline: Path, dataset: Path, repeats: int) -> None:
    byte_compiled(sys.executable, baseline / "src", OURS)  # both timed as installed
    samples: dict[str, list[tuple[float, float, int]]] = {"base": [], "ours": []}
    for _ in range(repeats):
        for side, src in (("base", baseline / "src"), ("ours", OURS)):
            samples[side].append(run(src, ["summary", str(dataset), "--json"]))
    ours, base = samples["ours"], samples["base"]
    wall = statistics.median(s[0] for s in ours), statistics.median(s[0] for s in base)
    cpu = statistics.median(s[1] for s in ours), statistics.median(s[1] for s in base)
    rss = max(s[2] for s in ours) / 2**20, max(s[2] for s in base) / 2**20
    print(f"summary --json, {events_of(dataset):,} events, median of {repeats}:")
    print(f"  wall ours {wall[0]:6.2f} s / baseline {wall[1]:6.2f} s = {wall[0] / wall[1]:4.2f}x")
    print(f"  cpu  ours {cpu[0]:6.2f} s / baseline {cpu[1]:6.2f} s = {cpu[0] / cpu[1]:4.2f}x")
    print(f"  peak RSS ours {rss[0]:5.0f} MB / baseline {rss[1]:5.0f} MB = {rss[0] / rss[1]:4.2f}x")
    print(f"  same JSON document: {same_output(baseline, dataset)}")
    phases(OURS, dataset)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline", type=Path, required=True, help="checkout of the baseline commit")
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--mb-per-rank", type=float, default=34.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dataset", type=Path, default=None, help="an ingested dataset to reuse")
    options = parser.parse_args()
    if options.dataset is not None:
        compare(options.baseline, options.dataset, options.repeats)
        return
    with tempfile.TemporaryDirectory() as scratch:
        compare(options.baseline, make_dataset(Path(scratch), options.ranks, options.mb_per_rank), options.repeats)


if __name__ == "__main__":
    main()

"""``kinetoscope summary --json`` made rank by rank (``--by-rank``: in one process, ``--workers 1``,
and with ``--workers 2`` worker processes making the ranks' shares side by side) against every rank at once
(``--no-by-rank``), on datasets of growing size: wall and CPU time, the peak memory of the process
tree, the ratios, and whether the documents are the same.

Each summary is a whole process (``python -m kinetoscope``), the ways alternating, several
repeats; the medians are printed, and the peak is the largest of the repeats. Usage::

    python benchmarks/summary_by_rank.py --dataset DIR [--dataset DIR ...] [--repeats 5]
    python benchmarks/summary_by_rank.py --ranks 8 --mb-per-rank 34 --mb-per-rank 136

Each ``--mb-per-rank`` generates, imports and ingests a set of ``--ranks`` ranks
(``gen_multirank_trace.py``; 34 MB a rank is about 142 k events).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import byte_compiled, load_average, measured_process
from summary_vs_baseline import events_of, make_dataset

REPO = Path(__file__).resolve().parents[1]
OURS = REPO / "src"
WAYS = {
    "by rank": ("--by-rank", "--workers", "1"),  # every rank in the one process, on its threads
    "2 workers": ("--by-rank", "--workers", "2"),
    "at once": ("--no-by-rank",),
}


def run(argv: list[str]) -> tuple[float, float, int]:
    """(wall s, CPU s of it and its workers, peak bytes of its process tree) of one summary."""
    done = measured_process([sys.executable, "-m", "kinetoscope", *argv], env={"PYTHONPATH": str(OURS)})
    if done.returncode != 0:
        raise SystemExit(f"kinetoscope {' '.join(argv)} failed: {done.stderr[-2000:]}")
    return done.wall_s, done.cpu_s, done.peak_bytes


def same_document(dataset: Path) -> bool:
    outputs = []
    for flags in WAYS.values():
        argv = [sys.executable, "-m", "kinetoscope", "summary", str(dataset), "--json", *flags]
        outputs.append(subprocess.run(argv, env={"PYTHONPATH": str(OURS)}, capture_output=True, check=True).stdout)
    return len(set(outputs)) == 1


def compare(dataset: Path, repeats: int) -> None:
    samples: dict[str, list[tuple[float, float, int]]] = {way: [] for way in WAYS}
    for _ in range(repeats):
        for way, flags in WAYS.items():
            samples[way].append(run(["summary", str(dataset), "--json", *flags]))
    figures = {
        way: (
            statistics.median(s[0] for s in found),
            statistics.median(s[1] for s in found),
            max(s[2] for s in found) / 2**20,
        )
        for way, found in samples.items()
    }
    wall0, cpu0, rss0 = figures["at once"]
    print(f"{dataset}: {events_of(dataset):,} events, median of {repeats} (load {load_average()})")
    for way, (wall, cpu, rss) in figures.items():
        ratios = f"{wall / wall0:4.2f}x / {cpu / cpu0:4.2f}x / {rss / rss0:4.2f}x"
        print(f"  {way:<10} wall {wall:6.2f} s  cpu {cpu:6.2f} s  peak {rss:6.0f} MB   against at once {ratios}")
    print(f"  same JSON document every way: {same_document(dataset)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dataset", type=Path, action="append", default=[], help="an ingested dataset")
    parser.add_argument("--ranks", type=int, default=8)
    parser.add_argument("--mb-per-rank", type=float, action="append", default=[])
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    byte_compiled(sys.executable, OURS)
    for dataset in options.dataset:
        compare(dataset, options.repeats)
    for mb in options.mb_per_rank:
        with tempfile.TemporaryDirectory() as scratch:
            compare(make_dataset(Path(scratch), options.ranks, mb), options.repeats)


if __name__ == "__main__":
    main()

"""``kinetoscope summary --json`` made rank by rank (``--by-rank``) against every rank at once
(``--no-by-rank``), on datasets of growing size: wall and CPU time, peak RSS, the ratios, and
whether the two documents are the same.

Each summary is a whole process (``python -m kinetoscope``), the two ways alternating, several
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
from _common import byte_compiled, load_average
from commands_vs_baseline import run  # (wall s, CPU s, peak RSS bytes) of one kinetoscope process
from summary_vs_baseline import events_of, make_dataset

REPO = Path(__file__).resolve().parents[1]
OURS = REPO / "src"
WAYS = {"by rank": "--by-rank", "at once": "--no-by-rank"}


def same_document(dataset: Path) -> bool:
    outputs = []
    for flag in WAYS.values():
        argv = [sys.executable, "-m", "kinetoscope", "summary", str(dataset), "--json", flag]
        outputs.append(subprocess.run(argv, env={"PYTHONPATH": str(OURS)}, capture_output=True, check=True).stdout)
    return outputs[0] == outputs[1]


def compare(dataset: Path, repeats: int) -> None:
    samples: dict[str, list[tuple[float, float, int]]] = {way: [] for way in WAYS}
    for _ in range(repeats):
        for way, flag in WAYS.items():
            samples[way].append(run(OURS, ["summary", str(dataset), "--json", flag]))
    figures = {
        way: (
            statistics.median(s[0] for s in found),
            statistics.median(s[1] for s in found),
            max(s[2] for s in found) / 2**20,
        )
        for way, found in samples.items()
    }
    (wall, cpu, rss), (wall0, cpu0, rss0) = figures["by rank"], figures["at once"]
    print(f"{dataset}: {events_of(dataset):,} events, median of {repeats} (load {load_average()})")
    print(f"  wall     by rank {wall:7.2f} s / at once {wall0:7.2f} s = {wall / wall0:4.2f}x")
    print(f"  cpu      by rank {cpu:7.2f} s / at once {cpu0:7.2f} s = {cpu / cpu0:4.2f}x")
    print(f"  peak RSS by rank {rss:7.0f} MB / at once {rss0:7.0f} MB = {rss / rss0:4.2f}x")
    print(f"  same JSON document: {same_document(dataset)}")


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

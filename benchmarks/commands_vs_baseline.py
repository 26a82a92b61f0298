"""Every explorer command, this checkout against a baseline checkout, on the same traces in one run.

Runs ``kinetoscope import``, ``verify``, ``ingest``, ``summary --json``, ``export`` (Perfetto) and ``view``
(from its start until the viewer's index is ready, then stopped) as whole processes, once with this
checkout's ``src`` and once with the baseline's (a ``git worktree`` of an earlier commit), several
repeats each, alternating, and prints the median wall time of each, the ratio (ours / baseline)
and each side's peak memory (the child's max RSS). Usage::

    git worktree add /tmp/baseline <commit>
    python benchmarks/commands_vs_baseline.py --baseline /tmp/baseline TRACE_OR_DIR... [--repeats 3]

With no trace given it runs on ``tests/data``'s traces and, when present, the public corpus's
three largest traces and a generated capture-sized trace (``gen_multirank_trace.py``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "datasets" / "public-traces"
COMMANDS = ("import", "verify", "ingest", "summary", "export", "view")

sys.path.insert(0, str(REPO / "benchmarks"))
from _common import byte_compiled  # noqa: E402


def run(src: Path, argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, peak RSS bytes) of ``python -m kinetoscope ARGV`` with ``src`` first
    on the path. CPU time (user + system) is printed beside wall time: on a shared machine it varies less."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "kinetoscope", *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in (0, 1):
        raise SystemExit(f"{src}: kinetoscope {' '.join(argv)} failed: {child.stderr.read().decode()[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def run_view(src: Path, dataset: Path) -> tuple[float, float, int]:
    """``kinetoscope view DATASET --no-browser`` from its start until it prints that the index is ready
    (the index is built on first view), then stopped with Ctrl+C: the same three figures as `run`."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    start = time.perf_counter()
    child = subprocess.Popen(
        [sys.executable, "-m", "kinetoscope", "view", str(dataset), "--no-browser", "--port", "0"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    assert child.stdout is not None
    lines = []
    for line in child.stdout:  # "index ready" went to stdout in earlier versions, to stderr now
        lines.append(line)
        if "index ready" in line:
            break
    wall = time.perf_counter() - start
    child.send_signal(signal.SIGINT)
    usage = os.wait4(child.pid, 0)[2]
    if not any("index ready" in line for line in lines):
        said = "".join(lines)[-2000:]
        raise SystemExit(f"{src}: kinetoscope view {dataset} ended before its index was ready: {said}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


def one_round(src: Path, trace: Path, scratch: Path) -> dict[str, tuple[float, float, int]]:
    """Each command once on ``trace``, in a fresh directory."""
    shutil.rmtree(scratch, ignore_errors=True)
    sessions, dataset = scratch / "sessions", scratch / "dataset"
    return {
        "import": run(src, ["import", str(trace), "--out", str(sessions)]),
        "verify": run(src, ["verify", str(sessions)]),
        "ingest": run(src, ["ingest", str(sessions), "--out", str(dataset)]),
        "summary": run(src, ["summary", str(dataset), "--json"]),
        "export": run(src, ["export", str(dataset), "--format", "perfetto", "-o", str(scratch / "merged.pftrace")]),
        "view": run_view(src, dataset),
    }


def is_trace(trace: Path, scratch: Path) -> bool:
    """Whether this checkout's ``import`` takes the file (the corpus holds a few files that are not traces)."""
    run(REPO / "src", ["import", str(trace), "--out", str(scratch / "probe")])
    return (scratch / "probe").is_dir() and any((scratch / "probe").rglob("trace_info.pb"))


def compare(trace: Path, baseline: Path, repeats: int) -> None:
    with tempfile.TemporaryDirectory() as probe:
        if not is_trace(trace, Path(probe)):
            print(f"{trace.name[:44]:44} skipped: not a torch.profiler trace")
            return
    samples: dict[str, dict[str, list[tuple[float, float, int]]]] = {"ours": {}, "base": {}}
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeats):
            for side, src in (("base", baseline / "src"), ("ours", REPO / "src")):
                for command, sample in one_round(src, trace, Path(tmp) / side).items():
                    samples[side].setdefault(command, []).append(sample)
    size_mb = trace.stat().st_size / 1e6
    for command in COMMANDS:
        ours, base = samples["ours"][command], samples["base"][command]
        ours_s, base_s = statistics.median(s[0] for s in ours), statistics.median(s[0] for s in base)
        ours_cpu, base_cpu = statistics.median(s[1] for s in ours), statistics.median(s[1] for s in base)
        ours_mb, base_mb = max(s[2] for s in ours) / 2**20, max(s[2] for s in base) / 2**20
        print(
            f"{trace.name[:40]:40} {size_mb:6.1f} MB {command:8} wall ours {ours_s:5.2f} s / baseline {base_s:5.2f} s"
            f" = {ours_s / base_s:4.2f}x  cpu {ours_cpu:5.2f} / {base_cpu:5.2f} s = {ours_cpu / base_cpu:4.2f}x"
            f"  peak RSS {ours_mb:4.0f} / {base_mb:4.0f} MB = {ours_mb / base_mb:4.2f}x"
        )


def default_traces(scratch: Path) -> list[Path]:
    traces = sorted((REPO / "tests" / "data").rglob("*.json.gz"))
    if CORPUS.is_dir():
        corpus = [p for p in CORPUS.rglob("*") if p.name.endswith((".json", ".json.gz"))]
        traces += sorted(corpus, key=lambda p: p.stat().st_size)[-3:]
    generated = scratch / "generated"
    subprocess.run(
        [
            sys.executable,
            str(REPO / "benchmarks" / "gen_multirank_trace.py"),
            str(generated),
            "--ranks",
            "1",
            "--mb-per-rank",
            "20",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return [*traces, *sorted(generated.glob("*.json"))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("traces", nargs="*", type=Path)
    parser.add_argument("--baseline", type=Path, required=True, help="checkout of the baseline commit")
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    byte_compiled(sys.executable, options.baseline / "src", REPO / "src")  # both timed as installed
    with tempfile.TemporaryDirectory() as scratch:
        for trace in options.traces or default_traces(Path(scratch)):
            compare(trace, options.baseline, options.repeats)


if __name__ == "__main__":
    main()

"""From a raw trace to a full answer: kinetoscope against HTA 0.5 and AMD's TraceLens, side by side.

Each tool runs as whole processes (interpreter start and imports included, as a user meets
them), a fresh set per repeat, on the same raw traces copied to /tmp:

- kinetoscope, a new user's one command: ``kinetoscope summary TRACES`` (the answer in one screen)
  and ``kinetoscope summary TRACES --json`` (every section) on the raw traces (each imports them
  into a cache of light sessions beside them, ingests those into a dataset, then runs the
  analyses and the findings); the cache is removed before each repeat.
- kinetoscope, the full session: ``kinetoscope import TRACES --out SESSIONS`` (``trace.json``,
  ``ntrace.pb``, ``device_N.pb``) then ``kinetoscope summary SESSIONS --json``; two processes,
  timed together and each apart.
- HTA: ``TraceAnalysis(trace_dir)`` load, ``get_temporal_breakdown``, ``get_gpu_kernel_breakdown``
  and ``get_comm_comp_overlap``; one process.
- TraceLens: per rank file, ``TreePerfAnalyzer.from_file``, ``get_df_gpu_timeline``,
  ``get_df_kernel_launchers`` and ``get_df_kernel_launchers_summary``; one process.

Reported per tool: wall seconds of the processes, CPU seconds (user + system of each process
and the children it waited for, from ``wait4``), and peak memory (the largest sum of resident
memory over the process tree, sampled every 10 ms). Medians of ``--repeats``; ratios ours/peer.
A peer whose interpreter is missing is skipped, and the output says so.

Inputs: the largest public trace of the corpus with CPU-GPU flows (HTA's ``df_index_resolver``,
54 MB of JSON, 216,092 events, one V100 rank of a 2-rank NCCL job); a real trace with Python
stacks recorded here (``stack_trace.py``: a CPU MLP under ``with_stack=True, record_shapes=True``,
``--stack-steps`` steps, about 59 MB of JSON at 260), on which HTA's temporal breakdown, which
assumes device kernels, raises: the benchmark says which of HTA's analyses could not be made; and
a generated multi-rank set (``--generated-mb`` MB over ``--ranks`` ranks, ``gen_multirank_trace.py``).

  PYTHONPATH=src .venv/bin/python benchmarks/peers_speed.py --repeats 3

(``--ours-python`` defaults to the interpreter that runs this script.)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PUBLIC = REPO.parent / "shared" / "datasets" / "public-traces"
PUBLIC_TRACE = PUBLIC / "hta" / "tests" / "data" / "df_index_resolver" / "df_index_resolver.json.gz"
sys.path.insert(0, str(REPO / "benchmarks"))
from _common import byte_compiled, load_average, measured_process, package_tree  # noqa: E402

HTA_RUN = """
import logging, sys
logging.disable(logging.CRITICAL)
from hta.trace_analysis import TraceAnalysis
analysis = TraceAnalysis(trace_dir=sys.argv[1])
for name in ("get_temporal_breakdown", "get_gpu_kernel_breakdown", "get_comm_comp_overlap"):
    try:
        getattr(analysis, name)(visualize=False)
    except Exception as exc:  # HTA's breakdowns assume device kernels: said, and the others still run
        print(f"HTA_FAILED {name}: {type(exc).__name__}: {exc}", file=sys.stderr)
"""
TRACELENS_RUN = """
import contextlib, io, sys, warnings
warnings.simplefilter("ignore")
from TraceLens.TreePerf import TreePerfAnalyzer
for trace in sys.argv[1:]:
    with contextlib.redirect_stdout(io.StringIO()):
        analyzer = TreePerfAnalyzer.from_file(trace)
    analyzer.get_df_gpu_timeline()
    launchers = analyzer.get_df_kernel_launchers()
    TreePerfAnalyzer.get_df_kernel_launchers_summary(launchers)
"""


@dataclass
class Run:
    wall_s: float
    cpu_s: float
    peak_bytes: int
    failed: tuple[str, ...] = ()  # the peer's analyses that raised (``HTA_FAILED`` lines)


def run_process(argv: list[str], env: dict[str, str] | None = None) -> Run:
    """Run ``argv`` to its end; its wall and CPU seconds and the peak RSS of its process tree."""
    done = measured_process(argv, env)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:3])} ... exited {done.returncode}: {done.stderr.strip()[-600:]}")
    failed = tuple(line.split(maxsplit=1)[1] for line in done.stderr.splitlines() if line.startswith("HTA_FAILED "))
    return Run(done.wall_s, done.cpu_s, done.peak_bytes, failed)


def add(runs: list[Run]) -> Run:
    return Run(sum(r.wall_s for r in runs), sum(r.cpu_s for r in runs), max(r.peak_bytes for r in runs))


def ours(traces: list[Path], work: Path, python: str) -> dict[str, Run]:
    """kinetoscope import then summary --json, each a process; the sessions are new each time."""
    sessions = work / "sessions"
    shutil.rmtree(sessions, ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    imported = run_process([python, "-m", "kinetoscope", "import", *map(str, traces), "--out", str(sessions)], env)
    summary = run_process([python, "-m", "kinetoscope", "summary", str(sessions), "--json"], env)
    return {"import": imported, "summary": summary, "total": add([imported, summary])}


def raw_summary(traces: list[Path], python: str, *flags: str) -> Run:
    """``kinetoscope summary TRACES [FLAGS]`` on raw traces, their cache removed first: a first run."""
    for folder in {trace.parent for trace in traces}:
        shutil.rmtree(folder / ".kinetoscope", ignore_errors=True)
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    return run_process([python, "-m", "kinetoscope", "summary", *map(str, traces), *flags], env)


def hta(trace_dir: Path, python: str) -> Run:
    return run_process([python, "-c", HTA_RUN, str(trace_dir)])


def tracelens(traces: list[Path], python: str) -> Run:
    return run_process([python, "-c", TRACELENS_RUN, *map(str, traces)])


def median_run(runs: list[Run]) -> Run:
    return Run(
        statistics.median(r.wall_s for r in runs),
        statistics.median(r.cpu_s for r in runs),
        int(statistics.median(r.peak_bytes for r in runs)),
    )


def line(label: str, runs: list[Run]) -> str:
    """The medians, then the range over the repeats."""
    run = median_run(runs)
    walls, cpus = [r.wall_s for r in runs], [r.cpu_s for r in runs]
    spread = f"(wall {min(walls):.1f}-{max(walls):.1f}, CPU {min(cpus):.1f}-{max(cpus):.1f})"
    return (
        f"  {label:<36} wall {run.wall_s:7.2f} s   CPU {run.cpu_s:7.2f} s   "
        f"peak {run.peak_bytes / 2**20:6.0f} MiB   {spread}"
    )


def ratio(label: str, mine: Run, theirs: Run) -> str:
    return (
        f"  ours/{label:<34} wall {mine.wall_s / theirs.wall_s:5.2f}   CPU {mine.cpu_s / theirs.cpu_s:5.2f}   "
        f"peak {mine.peak_bytes / theirs.peak_bytes:5.2f}   ({theirs.wall_s / mine.wall_s:.1f}x faster in wall time)"
    )


def compare(name: str, traces: list[Path], args: argparse.Namespace) -> None:
    work = Path(tempfile.mkdtemp(prefix="kinetoscope-peers-"))
    trace_dir = traces[0].parent
    results: dict[str, list[Run]] = {
        **{"screen": [], "raw": [], "import": [], "summary": [], "total": []}, "hta": [], "tracelens": []
    }
    peers = {"hta": args.hta_python, "tracelens": args.tracelens_python}
    present = {peer: Path(python).exists() for peer, python in peers.items()}
    try:
        for _ in range(args.repeats):
            results["screen"].append(raw_summary(traces, args.ours_python))
            results["raw"].append(raw_summary(traces, args.ours_python, "--json"))
            for part, run in ours(traces, work, args.ours_python).items():
                results[part].append(run)
            if present["hta"]:
                results["hta"].append(hta(trace_dir, args.hta_python))
            if present["tracelens"]:
                results["tracelens"].append(tracelens(traces, args.tracelens_python))
    finally:
        shutil.rmtree(work, ignore_errors=True)
        for folder in {trace.parent for trace in traces}:
            shutil.rmtree(folder / ".kinetoscope", ignore_errors=True)
    size_mb = sum(t.stat().st_size for t in traces) / 1e6
    print(f"\n{name}: {len(traces)} file(s), {size_mb:.1f} MB on disk; medians of {args.repeats}")
    screen, raw, full = median_run(results["screen"]), median_run(results["raw"]), median_run(results["total"])
    print(line("kinetoscope summary TRACES", results["screen"]))
    print(line("kinetoscope summary TRACES --json", results["raw"]))
    print(line("kinetoscope import + summary --json", results["total"]))
    print(line("  of which import", results["import"]))
    print(line("  of which summary --json", results["summary"]))
    for peer, title in (("hta", "HTA 0.5 load + 3 analyses"), ("tracelens", "TraceLens TreePerf")):
        if not present[peer]:
            print(f"  {title:<36} skipped: no interpreter at {peers[peer]}")
            continue
        theirs = median_run(results[peer])
        print(line(title, results[peer]))
        for failure in sorted({f for run in results[peer] for f in run.failed}):
            print(f"    {peer} could not make {failure}")
        print(ratio(f"{peer} (summary TRACES)", screen, theirs))
        print(ratio(f"{peer} (summary TRACES --json)", raw, theirs))
        print(ratio(f"{peer} (import + summary)", full, theirs))


def compile_sources(args: argparse.Namespace) -> None:
    """Each tool's modules byte-compiled first, as an installed tool's are (``_common.byte_compiled``)."""
    byte_compiled(args.ours_python, REPO / "src")
    for python, package in ((args.hta_python, "hta"), (args.tracelens_python, "TraceLens")):
        tree = package_tree(python, package) if Path(python).exists() else None
        if tree is not None:
            byte_compiled(python, tree)


def public_inputs(work: Path) -> list[Path] | None:
    if not PUBLIC_TRACE.is_file():
        print(f"{PUBLIC_TRACE}: the public trace corpus is not here; the public trace is skipped")
        return None
    folder = work / "public"
    folder.mkdir()
    copy = folder / PUBLIC_TRACE.name
    shutil.copyfile(PUBLIC_TRACE, copy)  # the corpus is read-only; import writes beside a trace
    return [copy]


def stack_inputs(work: Path, steps: int, python: str) -> list[Path]:
    """A real trace with Python stacks, recorded here (``stack_trace.py``) with ``python``'s torch."""
    trace = work / "stacks" / "mlp_with_stack.pt.trace.json.gz"
    subprocess.run([python, str(REPO / "benchmarks" / "stack_trace.py"), str(steps), str(trace)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    return [trace]


def generated_inputs(work: Path, ranks: int, total_mb: float) -> list[Path]:
    from gen_multirank_trace import generate

    return generate(work / "generated", ranks, total_mb / ranks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--generated-mb", type=float, default=80.0, help="size of the generated set (0: skip)")
    parser.add_argument("--ranks", type=int, default=4, help="ranks of the generated set")
    parser.add_argument("--skip-public", action="store_true", help="leave out the public trace")
    parser.add_argument("--stack-steps", type=int, default=260,
                        help="steps of the recorded trace with Python stacks (260: about 59 MB of JSON; 0: skip)")
    parser.add_argument("--ours-python", default=sys.executable, help="kinetoscope's interpreter (default: this one)")
    parser.add_argument("--hta-python", default="/tmp/htavenv/bin/python")
    parser.add_argument("--tracelens-python", default="/tmp/tlvenv/bin/python")
    args = parser.parse_args()
    print(f"load before: {load_average()} on {os.cpu_count()} CPUs")
    print(f"kinetoscope: {args.ours_python}\nHTA: {args.hta_python}\nTraceLens: {args.tracelens_python}")
    compile_sources(args)
    work = Path(tempfile.mkdtemp(prefix="kinetoscope-peers-in-"))
    try:
        sets = []
        public = None if args.skip_public else public_inputs(work)
        if public:
            sets.append(("df_index_resolver (public, 1 rank, 54 MB of JSON gzipped)", public))
        if args.stack_steps > 0:
            stacks = stack_inputs(work, args.stack_steps, args.ours_python)
            sets.append((f"MLP on the CPU with Python stacks (recorded here, {args.stack_steps} steps)", stacks))
        if args.generated_mb > 0:
            sets.append((f"generated, {args.ranks} ranks", generated_inputs(work, args.ranks, args.generated_mb)))
        for name, traces in sets:
            compare(name, traces, args)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"\nload after: {load_average()}")


if __name__ == "__main__":
    main()

"""Ingest speed: MB of Kineto JSON per CPU second, this checkout against a baseline checkout.

Each trace is imported once (with this checkout's code) into a session directory; then, for
every repeat, ``kinetoscope ingest SESSIONS --jobs 1`` runs as a fresh process once with the
baseline's ``src`` and once with this checkout's, alternately (so both see the same load).
Modules' bytecode is cached (in a temporary ``PYTHONPYCACHEPREFIX``, by one unmeasured run
of each side), as an installed package has it. What a run costs is its CPU time (user + sys
of the process, from ``wait4``: wall time on a shared machine measures the neighbours), from
interpreter start to exit, imports included; its peak RSS comes from the same call. The
datasets of the two sides are compared table by table and column by column
(``tests/ingest/digest.py``): a difference is reported, as the point is to be faster without
changing a value.

Usage: python benchmarks/ingest_speed.py [--baseline-src DIR] [--repeats 3] [TRACE ...]
Without --baseline-src, ``main`` is checked out in a temporary ``git worktree`` (removed
afterwards). Without traces, HTA's ``df_index_resolver.json.gz`` and PARAM's ``resnet_kineto``
of the public corpus (``../shared/datasets/public-traces``) are used, decompressed under /tmp.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from kinetoscope.importer.trace_import import ImportOptions, import_trace  # noqa: E402
from tests.ingest.digest import dataset_digest, differences  # noqa: E402

CORPUS = REPO.parent / "shared" / "datasets" / "public-traces"
DEFAULT_TRACES = (
    CORPUS / "hta" / "tests" / "data" / "df_index_resolver" / "df_index_resolver.json.gz",
    CORPUS / "param" / "et_replay" / "tests" / "inputs" / "resnet_kineto.json.gz",
)
GOAL_MB_PER_CPU_S = 150


@dataclass
class Side:
    name: str
    src: Path
    cpu_s: list[float] = field(default_factory=list)
    rss_bytes: list[int] = field(default_factory=list)


def child_env(src: Path, pycache: Path) -> dict[str, str]:
    """The environment of an ingest run from ``src``: its modules' bytecode cached under ``pycache``
    (as an installed package has it; without a cache every run would compile them again)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(src), "PYTHONPYCACHEPREFIX": str(pycache)}


def measure(src: Path, sessions: Path, out: Path) -> tuple[float, int]:
    """(CPU seconds, peak RSS bytes) of one ``kinetoscope ingest`` process run from ``src``
    (spawned and reaped here, so that the usage is that process's alone)."""
    shutil.rmtree(out, ignore_errors=True)
    env = child_env(src, out.parent / f"pycache-{out.name}")
    command = [sys.executable, "-m", "kinetoscope", "ingest", str(sessions), "--out", str(out), "--jobs", "1"]
    with tempfile.TemporaryFile() as errors, open(os.devnull, "wb") as quiet:
        actions = [(os.POSIX_SPAWN_DUP2, quiet.fileno(), 1), (os.POSIX_SPAWN_DUP2, errors.fileno(), 2)]
        pid = os.posix_spawn(command[0], command, env, file_actions=actions)
        _, status, usage = os.wait4(pid, 0)
        if os.waitstatus_to_exitcode(status):
            errors.seek(0)
            raise SystemExit(f"ingest from {src} failed: {errors.read().decode(errors='replace')}")
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024


@contextlib.contextmanager
def baseline_checkout(given: Path | None) -> Iterator[Path]:
    """The baseline's ``src``: ``given``'s, or that of a temporary worktree of ``main``."""
    if given is not None:
        yield given / "src"
        return
    where = Path(tempfile.mkdtemp(prefix="kinetoscope-main-"))
    subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(where), "main"], check=True)
    try:
        yield where / "src"
    finally:
        subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(where)], check=False)


def json_copy(trace: Path, work: Path) -> Path:
    """The trace as plain JSON under ``work`` (decompressed when gzipped)."""
    if trace.suffix != ".gz":
        return trace
    plain = work / trace.name.removesuffix(".gz")
    with gzip.open(trace) as source, plain.open("wb") as target:
        shutil.copyfileobj(source, target)
    return plain


def bench(trace: Path, sides: list[Side], repeats: int, work: Path) -> None:
    plain = json_copy(trace, work)
    sessions = work / f"{plain.stem}-sessions"
    import_trace(plain, ImportOptions(out_dir=sessions))
    size_mb = sum(p.stat().st_size for p in sessions.rglob("trace.json")) / 1e6
    for side in sides:  # once unmeasured: bytecode cached, the trace in the page cache
        measure(side.src, sessions, work / f"ds-{side.name}")
    for _ in range(repeats):
        for side in sides:
            cpu_s, rss = measure(side.src, sessions, work / f"ds-{side.name}")
            side.cpu_s.append(cpu_s)
            side.rss_bytes.append(rss)
    digests = [dataset_digest(work / f"ds-{side.name}") for side in sides]
    events = sum(part["rows"] for part in digests[-1]["events"])
    print(f"\n{trace.name}: {size_mb:.1f} MB of trace.json, {events:,} events, {repeats} repeats (median)")
    for side in sides:
        cpu_s = statistics.median(side.cpu_s)
        rss_mb = max(side.rss_bytes) / 2**20
        spread = f"{min(side.cpu_s):.2f}-{max(side.cpu_s):.2f}"
        print(
            f"  {side.name:<9} {cpu_s:6.2f} CPU s ({spread})  {size_mb / cpu_s:6.1f} MB/s per core"
            f"  {events / cpu_s / 1e3:7.1f} k events/s  peak RSS {rss_mb:5.0f} MiB"
        )
    ratio = statistics.median(sides[0].cpu_s) / statistics.median(sides[-1].cpu_s)
    print(f"  {sides[-1].name} is {ratio:.2f}x the baseline's speed (goal: {GOAL_MB_PER_CPU_S} MB/s per core)")
    found = differences(digests[-1], digests[0])
    print("  datasets identical" if not found else f"  DATASETS DIFFER: {', '.join(found[:10])}")
    for side in sides:
        side.cpu_s.clear()
        side.rss_bytes.clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("traces", nargs="*", type=Path, help="Kineto JSON traces (.json or .json.gz)")
    parser.add_argument("--baseline-src", type=Path, help="a checkout to compare against (default: main)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    traces = args.traces or [t for t in DEFAULT_TRACES if t.exists()]
    if not traces:
        raise SystemExit("no traces given and the public corpus is not present")
    with baseline_checkout(args.baseline_src) as baseline, tempfile.TemporaryDirectory() as work:
        sides = [Side("baseline", baseline), Side("this", REPO / "src")]
        for trace in traces:
            bench(trace, sides, args.repeats, Path(work))


if __name__ == "__main__":
    main()

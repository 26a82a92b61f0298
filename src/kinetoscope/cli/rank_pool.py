"""Worker processes that make a rank-by-rank summary's shares side by side, one rank per task.

Threads share one interpreter lock: the analyses' Python parts of two ranks cannot run at once in
one process. Processes can; each holds its own rank's rows, so a worker costs about one rank's
peak in memory, and the number of workers is what the CPUs and the memory allow, the container's
limits (cgroup CPU quota and memory limit) included. Workers are spawned (not forked: the parent
may already run reading threads), start with the summary's own allocator settings and Arrow's
threads cut to their share, read their rank where the dataset lies, and send back only the shares.

Light at import (the summary's parser imports it before the dataset read starts): the process
pool's modules are imported when a pool is made.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import concurrent.futures as cf

# From this many CPUs on, ranks go side by side in workers of two threads each. Below, one process:
# on two CPUs two workers of one thread each are a quarter quicker (9.0 M events: 7.15 s against
# 9.54 s) but hold two ranks at once (1,640 MB against 931 MB), and a laptop's memory matters more
# there; ``--workers 2`` asks for them.
MIN_CPUS = 4
CPUS_PER_WORKER = 2
# A worker's peak while it analyses a rank: what the interpreter and the modules hold, and per
# event of the rank (an overestimate by 1.4-1.7x: 1,049 MB measured for ranks of 1.13 M events).
BASE_BYTES = 256 << 20
BYTES_PER_EVENT = 1024
MEMORY_SHARE = 0.8  # of the memory available when the summary starts
CGROUP = Path("/sys/fs/cgroup")
# (limit, usage) files of cgroup v2, then v1
MEMORY_FILES = (("memory.max", "memory.current"), ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes"))


def cpus() -> int:
    """The CPUs this process may use: its affinity, and its container's CPU quota (cgroup v2
    ``cpu.max``, v1 ``cpu.cfs_quota_us``), whichever is fewer."""
    count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = _cpu_quota()
    return max(1, min(count, quota)) if quota is not None else count


def _cpu_quota() -> int | None:
    """The container's CPU quota in whole CPUs (at least 1), or None where there is none."""
    v2 = _read(CGROUP / "cpu.max").split()
    if len(v2) == 2 and v2[0] != "max":
        quota, period = _ints(v2)
    else:
        quota, period = _ints([_read(CGROUP / "cpu" / "cpu.cfs_quota_us"), _read(CGROUP / "cpu" / "cpu.cfs_period_us")])
    return max(1, quota // period) if quota > 0 and period > 0 else None


def available_bytes() -> int:
    """Memory this process may still take: the system's available memory, and what is left under
    its container's limit (cgroup v2 ``memory.max`` less ``memory.current``, or v1), whichever is less."""
    import psutil

    available = int(psutil.virtual_memory().available)
    for limit, used in MEMORY_FILES:
        cap, taken = _ints([_read(CGROUP / limit), _read(CGROUP / used)])
        if 0 < cap < 1 << 60:  # v1 writes a huge number for "no limit"
            return min(available, max(0, cap - taken))
    return available


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _ints(texts: list[str]) -> tuple[int, int]:
    try:
        return int(texts[0]), int(texts[1])
    except (ValueError, IndexError):
        return 0, 0


def workers(dataset: Any, run: str | None, given: int | None) -> int:
    """How many worker processes make the shares: ``given`` (``--workers``, at most one per rank),
    else one per ``CPUS_PER_WORKER`` CPUs from ``MIN_CPUS`` CPUs on, at most one per rank and as
    many as the available memory holds at the largest rank's peak; 1: none, this process alone."""
    ranks = dataset.ranks(run)
    if given is not None:
        return max(1, min(given, len(ranks)))
    count = min(len(ranks), cpus() // CPUS_PER_WORKER) if cpus() >= MIN_CPUS else 1
    if count <= 1 or not hasattr(dataset, "path"):
        return 1
    largest = _largest_rank_events(dataset, run)
    if largest is None:
        return 1
    return max(1, min(count, int(available_bytes() * MEMORY_SHARE // (BASE_BYTES + BYTES_PER_EVENT * largest))))


def _largest_rank_events(dataset: Any, run: str | None) -> int | None:
    """The events of the largest rank (of ``run``), from the parts' footers; a part outside a
    ``run=``/``rank=`` folder counts in every rank. None where a footer cannot be read."""
    import pyarrow.parquet as pq

    per_rank: dict[tuple[str, str], int] = {}
    unplaced = 0
    try:
        for path in dataset.parts("events"):
            rows = pq.read_metadata(path).num_rows
            folders = dict(part.split("=", 1) for part in Path(path).relative_to(dataset.path).parts if "=" in part)
            if "run" in folders and "rank" in folders:
                if run is None or folders["run"] == run:
                    key = (folders["run"], folders["rank"])
                    per_rank[key] = per_rank.get(key, 0) + rows
            else:
                unplaced += rows
    except (OSError, ValueError):  # a damaged part: reading the ranks says which
        return None
    return max(per_rank.values(), default=0) + unplaced


def threads_per_worker(threads: int, count: int) -> int:
    """Each worker's threads: its share of the CPUs, at most ``threads`` (``--threads``)."""
    return max(1, min(threads, cpus() // count))


@contextlib.contextmanager
def pool(count: int, threads: int) -> Iterator[cf.Executor]:
    """``count`` spawned worker processes, each set up as the summary's own process is, with
    Arrow's CPU threads cut to ``threads``. When the block fails (a rank's error, Ctrl-C) the
    ranks not yet started are cancelled rather than run."""
    import concurrent.futures as cf
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    executor = cf.ProcessPoolExecutor(count, mp_context=context, initializer=_started, initargs=(threads,))
    try:
        yield executor
    except BaseException:
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    executor.shutdown(wait=True)


def _started(threads: int) -> None:
    import pyarrow as pa

    from kinetoscope.cli.malloc_options import tune_malloc

    tune_malloc()
    pa.set_memory_pool(pa.system_memory_pool())
    pa.set_cpu_count(threads)

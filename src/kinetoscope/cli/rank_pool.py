"""Worker processes that make a rank-by-rank summary's shares side by side, one rank per task.

Threads share one interpreter lock: the analyses' Python parts of two ranks cannot run at once in
one process. Processes can; each holds its own rank's rows, so a worker costs about one rank's
peak in memory, and the number of workers is what the CPUs and the memory allow. Workers are
spawned (not forked: the parent already runs reading threads), and start with the summary's own
allocator settings; they read their rank where the dataset lies, and only the shares come back.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures.process import BrokenProcessPool
from typing import Any

__all__ = ["BrokenProcessPool", "pool", "threads_per_worker", "workers"]

# From this many CPUs on, ranks go side by side in workers of two threads each. Below, one process:
# on two CPUs two workers of one thread each are a quarter quicker (9.0 M events: 7.15 s against
# 9.54 s) but hold two ranks at once (1,640 MB against 931 MB), and a laptop's memory matters more
# there; ``--workers 2`` asks for them.
MIN_CPUS = 4
CPUS_PER_WORKER = 2
# A worker's peak while it analyses a rank: what the interpreter and the modules hold, and per
# event of the rank (measured: 1,049 MB for ranks of 1.13 M events, 251 MB for 142 k).
BASE_BYTES = 256 << 20
BYTES_PER_EVENT = 1024
MEMORY_SHARE = 0.8  # of the memory available when the summary starts


def cpus() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


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
    return max(1, min(count, _memory_allows(dataset, ranks)))


def _memory_allows(dataset: Any, ranks: list[tuple[str, int]]) -> int:
    """Workers the available memory holds, each at the peak of the largest rank's events."""
    import psutil
    import pyarrow.parquet as pq

    from kinetoscope.ingest.dataset_dir import rank_files

    rows = [sum(pq.read_metadata(p).num_rows for p in rank_files(dataset.path, "events", *key)) for key in ranks]
    largest = max(rows, default=0)
    available = psutil.virtual_memory().available * MEMORY_SHARE
    return int(available // (BASE_BYTES + BYTES_PER_EVENT * largest))


def threads_per_worker(threads: int, count: int) -> int:
    """Each worker's threads: its share of the CPUs, at most ``threads`` (``--threads``)."""
    return max(1, min(threads, cpus() // count))


@contextlib.contextmanager
def pool(count: int) -> Iterator[cf.Executor]:
    """``count`` spawned worker processes, each set up as the summary's own process is."""
    context = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(count, mp_context=context, initializer=_started) as executor:
        yield executor


def _started() -> None:
    import pyarrow as pa

    from kinetoscope.cli.malloc_options import tune_malloc

    tune_malloc()
    pa.set_memory_pool(pa.system_memory_pool())

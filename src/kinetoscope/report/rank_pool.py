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
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kinetoscope import _helper_process as helper
from kinetoscope import _resources as resources

if TYPE_CHECKING:
    import concurrent.futures as cf

# From this many CPUs on, ranks go side by side in workers of two threads each. Below, one process:
# on two CPUs two workers of one thread each are a quarter quicker (9.0 M events: 7.15 s against
# 9.54 s) but hold two ranks at once (1,640 MB against 931 MB), and a laptop's memory matters more
# there; ``--workers 2`` asks for them.
MIN_CPUS = 4
CPUS_PER_WORKER = 2
# A worker's peak while it analyses a rank: what the interpreter and the modules hold, and per
# event of the rank (an overestimate: 1,425 MB estimated, 1,049 MB measured for ranks of 1.13 M events).
BASE_BYTES = 256 << 20
BYTES_PER_EVENT = 1024
MEMORY_SHARE = 0.8  # of the memory available when the summary starts


def cpus() -> int:
    """The CPUs this process may use (its affinity and its control groups' CPU quota)."""
    return resources.cpus()


def available_bytes() -> int:
    """The memory this process may still take (the system's, and its control groups' limits)."""
    import psutil

    return resources.available_bytes(int(psutil.virtual_memory().available))


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
    ranks not yet started are cancelled and the workers ended, so the command ends at once."""
    import concurrent.futures as cf
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    with helper.spawning():  # the workers start when ranks are submitted, inside the block
        executor = cf.ProcessPoolExecutor(count, mp_context=context, initializer=_started, initargs=(threads,))
        try:
            yield executor
        except BaseException:
            workers = list((getattr(executor, "_processes", None) or {}).values())  # (3.14: terminate_workers)
            executor.shutdown(wait=False, cancel_futures=True)  # (which lets go of the workers' list)
            for process in workers:
                process.terminate()  # the ranks under way and the one queued for each worker
            raise
        executor.shutdown(wait=True)


def _started(threads: int) -> None:
    import pyarrow as pa

    from kinetoscope.report.malloc_options import tune_malloc

    tune_malloc()
    pa.set_memory_pool(pa.system_memory_pool())
    pa.set_cpu_count(threads)

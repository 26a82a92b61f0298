"""Cost of CPU memory history per allocation event, against the same work unrecorded.

Runs, in one process, an allocation-heavy loop (allocate and free a small tensor, with
``--depth`` extra Python frames above it) and a small MLP training step, each:
unrecorded (baseline), recorded without stacks, recorded with Python stacks, and recorded
with Python stacks bounded to the flight recorder's default history (``kinetoscope run
--flight-recorder``: the last 100,000 events, the rest dropped as they age). Prints
medians of several repeats, the ratio to the baseline and the cost per event: the extra
time divided by the events recorded (an allocation and a free are two events).

    PYTHONPATH=src python benchmarks/memory_history.py [--repeats 7] [--depth 25]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

import kinetoscope
from kinetoscope.capture.memory import history
from kinetoscope.capture.running import run_settings

GOAL_US_PER_EVENT = 2.0
DEFAULT_DEPTH = 25
LOOP_ALLOCATIONS = 20_000


def allocate_loop() -> None:
    for _ in range(LOOP_ALLOCATIONS):
        x = torch.empty(64)
        del x


def at_depth(depth: int, work: Callable[[], None]) -> None:
    if depth == 0:
        work()
        return
    at_depth(depth - 1, work)


def training_steps() -> Callable[[], None]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(32, 128), torch.randint(0, 10, (32,))

    def steps() -> None:
        for _ in range(200):
            optimizer.zero_grad()
            torch.nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()

    return steps


UNBOUNDED_ENTRIES = 10_000_000


def timed(work: Callable[[], None], stacks: str | None, max_entries: int, depth: int) -> tuple[float, int]:
    """Seconds for one run of ``work``, and the allocation events recorded during it (0: unrecorded)."""
    recorded = max_entries > 0
    if recorded:
        kinetoscope.memory.record_memory_history(max_entries=max_entries, stacks=stacks)
    start = time.perf_counter()
    at_depth(depth, work)
    elapsed = time.perf_counter() - start
    events = 0
    if recorded:
        _, counts, _ = history.take_snapshot()
        events = counts.entries_total
        kinetoscope.memory.record_memory_history(enabled=False)
    return elapsed, events


def measure(name: str, work: Callable[[], None], repeats: int, depth: int) -> None:
    work()  # warm caches and the allocator
    variants = (("baseline", None, 0), ("no stacks", None, UNBOUNDED_ENTRIES),
                ("python stacks", "python", UNBOUNDED_ENTRIES),
                ("flight (100k)", "python", run_settings.DEFAULT_FLIGHT_MAX_ENTRIES))
    runs: dict[str, list[tuple[float, int]]] = {label: [] for label, _, _ in variants}
    for _ in range(repeats):  # interleaved, so load on a shared machine hits every variant alike
        for label, stacks, max_entries in variants:
            runs[label].append(timed(work, stacks, max_entries, depth))
    rows = {label: (statistics.median(r[0] for r in found), statistics.median(r[1] for r in found))
            for label, found in runs.items()}
    base_s = rows["baseline"][0]
    print(f"\n{name} (median of {repeats})")
    print(f"  {'':14} {'time':>10} {'ratio':>7} {'events':>9} {'us/event':>9}")
    for label, (elapsed, events) in rows.items():
        per_event = (elapsed - base_s) / events * 1e6 if events else 0.0
        print(f"  {label:14} {elapsed * 1e3:8.1f}ms {elapsed / base_s:6.2f}x {events:9d} {per_event:9.3f}")
    per_event = (rows["python stacks"][0] - base_s) / rows["python stacks"][1] * 1e6
    verdict = "meets" if per_event <= GOAL_US_PER_EVENT else "MISSES"
    print(f"  python stacks: {per_event:.2f} us/event, {verdict} the {GOAL_US_PER_EVENT} us/event goal")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--depth", type=int, default=DEFAULT_DEPTH, help="extra Python frames above the work")
    args = parser.parse_args()
    torch.set_num_threads(1)
    kinetoscope.memory.record_memory_history()  # build or load the hook before timing
    kinetoscope.memory.record_memory_history(enabled=False)
    measure(f"allocate/free loop, {LOOP_ALLOCATIONS} allocations, {args.depth} extra frames deep", allocate_loop,
            args.repeats, args.depth)
    measure(f"MLP training, 200 steps (forward, backward, SGD), {args.depth} extra frames deep", training_steps(),
            args.repeats, args.depth)


if __name__ == "__main__":
    main()

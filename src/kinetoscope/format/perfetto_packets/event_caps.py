"""``max_events_per_device``: which executions a cap keeps (the newest), with memory bounded by the cap."""

from __future__ import annotations

import heapq
from collections import Counter


class NewestKeeper:
    """Remembers the newest ``cap`` start times per device to find what a cap keeps."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.heaps: dict[int, list[int]] = {}
        self.totals: Counter[int] = Counter()

    def observe(self, device: int, ts_ns: int) -> None:
        self.totals[device] += 1
        heap = self.heaps.setdefault(device, [])
        if len(heap) < self.cap:
            heapq.heappush(heap, ts_ns)
        elif ts_ns > heap[0]:
            heapq.heapreplace(heap, ts_ns)

    def cutoffs(self) -> dict[int, tuple[int, int]]:
        """Device -> (oldest kept start, how many executions starting exactly then are kept)."""
        found = {}
        for device, heap in self.heaps.items():
            if self.totals[device] > self.cap:
                oldest = heap[0]
                found[device] = (oldest, sum(1 for ts in heap if ts == oldest))
        return found


class Cutoff:
    """Second-pass filter: keeps executions at or after each capped device's cutoff."""

    def __init__(self, cutoffs: dict[int, tuple[int, int]]) -> None:
        self.cutoffs = cutoffs
        self.ties_left = {device: ties for device, (_, ties) in cutoffs.items()}

    def keeps(self, device: int, ts_ns: int) -> bool:
        found = self.cutoffs.get(device)
        if found is None or ts_ns > found[0]:
            return True
        if ts_ns == found[0] and self.ties_left[device] > 0:
            self.ties_left[device] -= 1
            return True
        return False

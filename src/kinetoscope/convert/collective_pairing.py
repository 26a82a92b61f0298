"""Each collective execution paired with the ``c10d::`` op that issued it."""

from __future__ import annotations

from collections import deque
from typing import Any

from kinetoscope.model import execution as ke


def pair_collectives(collectives: list[ke.Execution], callers: list[tuple[int, str, Any]]) -> list[ke.Execution]:
    """Give each collective execution the ``External id`` of the ``c10d::`` op that issued it.

    Process groups run their work in the order it was issued, so the k-th ``gloo:all_reduce``
    to start was issued by the k-th ``c10d::allreduce_``. Pairs are made per collective, in
    time order, and only when the op started before the execution.
    """
    queues: dict[str, deque[tuple[int, Any]]] = {}
    for ts_ns, op, external in sorted(callers, key=lambda caller: caller[0]):
        queues.setdefault(op, deque()).append((ts_ns, external))
    ordered = sorted(collectives, key=lambda execution: execution.ts_ns)
    for execution in ordered:
        queue = queues.get(ke.collective_op(execution.name))
        if queue and queue[0][0] <= execution.ts_ns:
            _, external = queue.popleft()
            if external is not None:
                execution.args = {**execution.args, "caller External id": external}
    return ordered

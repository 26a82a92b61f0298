"""Several Python threads contending for the GIL (CPU ranks recorded ``with_stack=True``).

Only one thread runs Python at a time. A frame's own time (not in ops, not in the C functions it
calls, which may release the GIL) runs on wall time, so threads whose frames' own time adds up to
more than the steps' span cannot all have run: the excess is time spent waiting for the GIL, at
least.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from kinetoscope.findings.engine import Observation, rule, severity_by_share
from kinetoscope.findings.ranks import RankData
from kinetoscope.model import kinds

NS_PER_MS = 1_000_000
C_FUNCTION = "^<built-in "  # C calls, recorded as Python events: they may release the GIL (sleep, I/O, locks)


def _span_ns(data: RankData) -> int:
    steps = data.step_rows
    if not len(steps):
        return data.wall_ns
    return int(data.ends(steps).max() - data.ints("ts_ns")[steps].min())


@rule(
    "gil_contention",
    "Python threads wait for each other's GIL (CPU)",
    "medium",
    "Run the Python work in processes instead of threads (`multiprocessing`, DataLoader workers), move it into "
    "ops or C functions that release the GIL, or on a free-threaded Python build let the threads run at once.",
    min_threads=2,
    min_thread_pct=20,
    min_wait_pct=10,
)
def gil_contention(data: RankData, limits: Mapping[str, float]) -> list[Observation]:
    """Python frames' own time on ``min_threads`` threads (each ``min_thread_pct``% of the steps' span)
    adding up to ``min_wait_pct``% of the span more than the span itself."""
    python = data.kind(kinds.PYTHON) & data.in_steps() & ~data.name_matches(C_FUNCTION)
    if not python.any():
        return []
    span_ns = _span_ns(data)
    tids, at = np.unique(data.ints("tid")[python], return_inverse=True)
    own_ns = np.bincount(at, weights=data.ints("self_ns")[python].astype(np.float64), minlength=len(tids))
    busy = own_ns >= limits["min_thread_pct"] / 100 * span_ns
    wait_ns = int(own_ns[busy].sum() - span_ns)
    if busy.sum() < max(limits["min_threads"], 2) or wait_ns < limits["min_wait_pct"] / 100 * span_ns:
        return []
    rows = np.flatnonzero(python & np.isin(data.ints("tid"), tids[busy]))
    seen: dict[str, Any] = {
        "threads": int(busy.sum()),
        "span_ns": span_ns,
        "python_own_ns_by_thread": {str(t): int(ns) for t, ns in zip(tids[busy], own_ns[busy], strict=True)},
        "python_own_ns": int(own_ns[busy].sum()),
        "gil_wait_ns": wait_ns,
        "top_frames": data.top_names_at(rows, data.ints("self_ns")[rows]),
    }
    summary = (
        f"{seen['threads']} threads run {seen['python_own_ns'] / NS_PER_MS:.1f} ms of Python in a "
        f"{span_ns / NS_PER_MS:.1f} ms span: at least {wait_ns / NS_PER_MS:.1f} ms waiting for the GIL; "
        f"mostly {seen['top_frames'][0]['name']}"
    )
    basis = "the Python time beyond the span, which one GIL cannot have run (a lower bound of the waiting)"
    return [Observation(summary, seen, rows, wait_ns, basis, severity_by_share(wait_ns, data.wall_ns))]

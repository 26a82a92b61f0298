"""CUDA and HIP graph replays: what a replay's events mean.

One ``cudaGraphLaunch`` (``hipGraphLaunch``, the driver's ``cuGraphLaunch``) queues every node
of a captured graph at once; each node's kernel carries the graph launch's correlation id, so
the trace links all of them to that one call. These decisions follow:

* a replay's kernels are not launches: the delay from a launch call to its work is measured
  for the first node of each replay only (the graph launch's own delay); the other nodes were
  queued by the graph, and their start says how long the nodes before them ran;
* a host waiting for a replay (``cudaStreamSynchronize`` after a graph launch, or any wait
  while work the host already queued has not started) does not idle the device: the work was
  queued, so such time is queueing, not a stray synchronization;
* ``waits_for_replay`` decides which host waits are such waits (column form, numpy);
* a trace with replays but without their capture (``cudaStreamBeginCapture`` ...) cannot say
  which op queued each node: rules that judge ops by their device work abstain there.
"""

from __future__ import annotations

import re

import numpy as np

# Names of the calls that replay a graph (the runtime's ``_v10000``-style suffixes included).
LAUNCH_PATTERN = r"^(cuda|hip|cu)GraphLaunch"
BEGIN_CAPTURE_PATTERN = r"^(cuda|hip|cu)StreamBeginCapture"
END_CAPTURE_PATTERN = r"^(cuda|hip|cu)StreamEndCapture"
_LAUNCH_RE = re.compile(LAUNCH_PATTERN)


def is_graph_launch(name: str) -> bool:
    """Whether a runtime call named ``name`` replays a CUDA/HIP graph."""
    return _LAUNCH_RE.match(name) is not None


def replay_spans(launch_row: np.ndarray, launch_ts_ns: np.ndarray, end_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) of each graph replay, sorted by start: from its graph launch call's start to
    the end of its last node. ``launch_row`` names each replayed node's launch call (a row
    position), ``launch_ts_ns`` that call's start, ``end_ns`` the node's end."""
    if not len(launch_row):
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty.copy()
    calls, first, inverse = np.unique(launch_row, return_index=True, return_inverse=True)
    ends = np.full(len(calls), np.iinfo(np.int64).min, dtype=np.int64)
    np.maximum.at(ends, inverse.reshape(-1), end_ns.astype(np.int64))
    starts = launch_ts_ns.astype(np.int64)[first]
    order = np.argsort(starts, kind="stable")
    return starts[order], ends[order]


def waits_for_replay(ts_ns: np.ndarray, spans: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """Whether a host wait starting at each of ``ts_ns`` waits for a graph replay: it starts
    after a replay was launched and before that replay's last node ended. Such a wait is the
    host reading a replay's result, not a stray synchronization."""
    starts, ends = spans
    if not len(starts) or not len(ts_ns):
        return np.zeros(len(ts_ns), dtype=bool)
    reach = np.maximum.accumulate(ends)  # the latest end of the replays launched so far
    before = np.searchsorted(starts, ts_ns, side="right") - 1
    found: np.ndarray = (before >= 0) & (reach[np.maximum(before, 0)] > ts_ns)
    return found

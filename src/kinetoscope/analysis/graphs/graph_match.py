"""Device work replayed from a CUDA/HIP graph, matched to the launches recorded when the graph was captured.

A replayed kernel's correlation id is its ``cudaGraphLaunch`` / ``hipGraphLaunch`` call's, so the
trace ties it to the op around the replay only. When the trace (one session of the rank, or
another session of it) also holds the capture (``graph_capture``), each replay is matched to it.

Kineto's JSON gives replayed kernels ``graph id`` / ``graph node id`` (CUPTI's ``graphId`` /
``graphNodeId``), but not the capture-time launches, and a node of the instantiated graph is a
clone with its own id: no id joins the two sides. So the match is by order: the k-th launch of a
capture is the k-th piece of device work of a replay (by start time), for a capture with as many
launches as the replay has pieces of work. Where a capture-time launch names its kernel (HIP's
``kernel`` arg, or an op named as a kernel of the trace, as Inductor's ``triton_*`` launches are),
the replayed kernel must have that name; where it names none but ops of its name and input dims ran
kernels outside graphs (a warm-up), the replayed kernel must be one of those; a launch of a kernel
must meet a kernel, not a copy. If order fails only on names and every launch names its kernel, the
k-th launch of each kernel name meets the k-th replayed kernel of that name (replays can start
nodes of parallel branches in another order). A replay that ran on several streams is matched only
where every kernel launch of the capture is checked so. A replay is refused, whole, and counted
with its reason, when no capture has its count, when the kernels differ, when order is all it would
rest on across streams, or when several captures of different ops fit.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from kinetoscope.analysis._tables import reuse
from kinetoscope.analysis._tables.column_arrays import codes, ints
from kinetoscope.analysis._tables.id_lookup import id_positions
from kinetoscope.analysis._tables.masks import is_in
from kinetoscope.analysis._tables.selection import DEVICE_WORK
from kinetoscope.analysis.graphs.graph_capture import GRAPH_LAUNCH, Capture, captures, name_mask
from kinetoscope.model import kinds

BY_ORDER = "order"
BY_NAME_ORDER = "order within kernel name"
NO_CAPTURE = "no capture in the trace"
NO_SUCH_COUNT = "no capture with as many launches"
NAMES_DIFFER = "kernels differ from every capture with as many launches"
SEVERAL = "several captures fit"
UNCHECKED = "replayed on several streams by launches that name no kernel"
METHODS = ("", BY_ORDER, BY_NAME_ORDER)  # ``Matches.method`` codes (0: unmatched)
REASONS = ("", NO_CAPTURE, NO_SUCH_COUNT, NAMES_DIFFER, SEVERAL, UNCHECKED)  # ``Matches.reason`` (0: matched)


@dataclass(frozen=True)
class Matches:
    """One rank's replayed device work and what it was matched to.

    Arrays run over ``work`` (positions of the replayed rows, grouped by replay, in start order).
    """

    work: np.ndarray
    replay: np.ndarray  # position of each row's graph launch call
    capture_launch: np.ndarray  # position of the capture-time launch it was matched to (-1: none)
    capture: np.ndarray  # index into ``captures`` (-1: none)
    method: np.ndarray  # how each row was matched: an index into ``METHODS`` (0: unmatched)
    reason: np.ndarray  # why each row is unmatched: an index into ``REASONS`` (0: matched)
    captures: list[Capture]


def replayed(events: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """(positions of the device work launched by a graph launch call, position of that call)."""
    launch_call = name_mask(events, GRAPH_LAUNCH)
    work = np.flatnonzero(is_in(events, "kind", DEVICE_WORK))
    call = id_positions(events, ints(events, "launch_id")[work])
    keep = (call >= 0) & launch_call[np.maximum(call, 0)]
    return work[keep], call[keep]


def match(events: pa.Table) -> Matches:
    """Each piece of replayed device work of one rank's events, matched to a capture-time launch
    (found once per table inside ``reuse.reusing()``: three analyses ask)."""
    return reuse.cached(events, "graph_match", lambda: _match(events))


def _match(events: pa.Table) -> Matches:
    work, call = replayed(events)
    ts = ints(events, "ts_ns")
    order = np.lexsort((work, ts[work], call))
    work, call = work[order], call[order]
    found = captures(events)
    capture_launch = np.full(len(work), -1, dtype=np.int64)
    capture = np.full(len(work), -1, dtype=np.int64)
    method, reason = np.zeros(len(work), dtype=np.int8), np.zeros(len(work), dtype=np.int8)
    if not len(work):
        return Matches(work, call, capture_launch, capture, method, reason, found)
    name_codes, values = codes(events, "name")
    is_kernel = is_in(events, "kind", (kinds.KERNEL,))
    starts = np.flatnonzero(np.r_[True, call[1:] != call[:-1]])
    ends = np.r_[starts[1:], len(work)]
    parallel = _on_several_streams(events, work, starts)
    decided: dict[bytes, tuple[int, str, np.ndarray | None]] = {}
    for replay, (start, end) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        rows_at = work[start:end]
        key = name_codes[rows_at].tobytes() + is_kernel[rows_at].tobytes() + bytes([int(parallel[replay])])
        if key not in decided:
            names = [values[c] for c in name_codes[rows_at].tolist()]
            decided[key] = _decide(found, names, is_kernel[rows_at], bool(parallel[replay]))
        chosen, how, launch_of = decided[key]
        if launch_of is None:
            reason[start:end] = REASONS.index(how)
            continue
        capture_launch[start:end] = launch_of
        capture[start:end] = chosen
        method[start:end] = METHODS.index(how)
    return Matches(work, call, capture_launch, capture, method, reason, found)


def _on_several_streams(events: pa.Table, work: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Whether each replay (its rows ``work[starts[i]:starts[i + 1]]``) ran on more than one stream:
    its start order then need not be the order its nodes were captured in."""
    if "stream" not in events.column_names or not len(work):
        return np.zeros(len(starts), dtype=bool)
    stream = ints(events, "stream")[work]
    changes = np.r_[False, stream[1:] != stream[:-1]].astype(np.int64)
    changes[starts] = 0  # a replay's first row changes nothing
    found: np.ndarray = np.add.reduceat(changes, starts) > 0
    return found


def _candidates(found: list[Capture], count: int, parallel: bool) -> tuple[list[int], str]:
    """The captures a replay of ``count`` rows may be matched to, or the reason there is none."""
    if not found:
        return [], NO_CAPTURE
    same_count = [i for i, c in enumerate(found) if len(c.launches) == count]
    if not same_count:
        return [], NO_SUCH_COUNT
    if parallel and not (same_count := [i for i in same_count if found[i].checked]):
        return [], UNCHECKED
    return same_count, ""


def _decide(
    found: list[Capture], names: list[str], is_kernel: np.ndarray, parallel: bool
) -> tuple[int, str, np.ndarray | None]:
    """(capture index, method, capture-time launch of each replayed row) or (-1, reason, None).
    A replay on several streams is matched only to a capture whose kernel launches are all checked."""
    same_count, refused = _candidates(found, len(names), parallel)
    if refused:
        return -1, refused, None
    for how, pairing in ((BY_ORDER, _in_order), (BY_NAME_ORDER, _in_name_order)):
        fits = [(i, p) for i in same_count if (p := pairing(found[i], names, is_kernel)) is not None]
        if len(fits) == 1:
            i, launch_of = fits[0]
            return i, how, found[i].launches[launch_of]
        if len(fits) > 1 and len({found[i].identity for i, _ in fits}) == 1:
            i, launch_of = fits[-1]  # captures of the same ops, shapes and frames: the attribution is one
            return i, how, found[i].launches[launch_of]
        if len(fits) > 1:
            return -1, SEVERAL, None
    return -1, NAMES_DIFFER, None


def _in_order(capture: Capture, names: list[str], is_kernel: np.ndarray) -> np.ndarray | None:
    """The k-th launch for the k-th row, if every named launch meets its kernel."""
    for k, expected in enumerate(capture.names):
        if (expected is not None and expected != names[k]) or (capture.kernel_launch[k] and not is_kernel[k]):
            return None
        known = capture.known[k]
        if expected is None and known is not None and names[k] not in known:
            return None
    return np.arange(len(names))


def _in_name_order(capture: Capture, names: list[str], is_kernel: np.ndarray) -> np.ndarray | None:
    """The k-th launch of each kernel name for the k-th row of that name; every launch must name one."""
    if any(name is None for name in capture.names) or sorted(map(str, capture.names)) != sorted(names):
        return None
    launch_of = np.empty(len(names), dtype=np.int64)
    waiting: dict[str, list[int]] = {}
    for k, name in enumerate(capture.names):
        waiting.setdefault(str(name), []).append(k)
    for k, name in enumerate(names):
        launch_of[k] = waiting[name].pop(0)
    return launch_of

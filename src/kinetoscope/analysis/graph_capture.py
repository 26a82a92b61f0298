"""Device work replayed from a CUDA/HIP graph, matched to the launches recorded when the graph was captured.

A replayed kernel's correlation id is its ``cudaGraphLaunch`` / ``hipGraphLaunch`` call's, so the
trace ties it to the op around the replay only. When the trace (one session of the rank, or
another session of it) also holds the capture, ``cudaStreamBeginCapture`` ...
``cudaStreamEndCapture`` on one thread, the launches made in between were recorded with the ops,
shapes and Python frames around them, but ran nothing: they are the launch calls on that thread in
that window that no device work correlates with.

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

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis import reuse, shapes
from kinetoscope.analysis.frames import DEVICE_WORK, codes, ints, is_in, positions, string_mask
from kinetoscope.model import kinds

GRAPH_LAUNCH = r"^(cuda|hip|cu)GraphLaunch"
BEGIN_CAPTURE = r"^(cuda|hip|cu)StreamBeginCapture"
END_CAPTURE = r"^(cuda|hip|cu)StreamEndCapture"
LAUNCH = r"^(cuda|hip|cu)\w*(LaunchKernel|LaunchCooperativeKernel|Memcpy|Memset)"
COPY_LAUNCH = r"(Memcpy|Memset)"
_KERNEL_ARG = r'"kernel":\s*(?P<value>"(?:[^"\\]|\\.)*")'

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
class Capture:
    """One capture window: its launch calls (row positions, in order) and what each names."""

    tid: int
    start_ns: int
    end_ns: int
    launches: np.ndarray
    names: list[str | None]  # the kernel each launch names (None: unknown)
    kernel_launch: np.ndarray  # bool: the launch starts a kernel (not a copy or set)
    known: list[frozenset[str] | None]  # kernels its op, same name and input dims, ran outside graphs
    identity: bytes  # each launch's op name, input shapes and Python frame: equal bytes, equal attribution

    @property
    def checked(self) -> bool:
        """Whether every kernel launch names its kernel or has kernels known from outside graphs."""
        return all(
            not launches_kernel or name is not None or known is not None
            for name, known, launches_kernel in zip(self.names, self.known, self.kernel_launch.tolist(), strict=True)
        )


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


def _matches(events: pa.Table, pattern: str) -> np.ndarray:
    return string_mask(events, "name", lambda names: pc.match_substring_regex(names, pattern))


def replayed(events: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """(positions of the device work launched by a graph launch call, position of that call)."""
    launch_call = _matches(events, GRAPH_LAUNCH)
    work = np.flatnonzero(is_in(events, "kind", DEVICE_WORK))
    call = positions(ints(events, "id"), ints(events, "launch_id")[work])
    keep = (call >= 0) & launch_call[np.maximum(call, 0)]
    return work[keep], call[keep]


def captures(events: pa.Table) -> list[Capture]:
    """Every capture window of one rank's events, in start order, with its launch calls."""
    begin, end = np.flatnonzero(_matches(events, BEGIN_CAPTURE)), np.flatnonzero(_matches(events, END_CAPTURE))
    if not len(begin):
        return []
    ts, dur, tid = ints(events, "ts_ns"), ints(events, "dur_ns"), ints(events, "tid")
    calls = np.flatnonzero(_capture_launch_calls(events))
    kernel_names = _kernel_names(events)
    windows = []
    for b in begin[np.argsort(ts[begin], kind="stable")].tolist():
        later = end[(tid[end] == tid[b]) & (ts[end] >= ts[b])]
        stop = int((ts[later] + dur[later]).min()) if len(later) else int((ts + dur).max())
        inside = calls[(tid[calls] == tid[b]) & (ts[calls] >= ts[b]) & (ts[calls] <= stop)]
        windows.append((int(tid[b]), int(ts[b]), stop, inside[np.lexsort((inside, ts[inside]))]))
    every = np.concatenate([w[3] for w in windows])
    op_at = positions(ints(events, "id"), ints(events, "op_id")[every])
    known, identity = _known_kernels(events, op_at), _identities(events, every, op_at)
    found, at = [], 0
    for thread, start_ns, stop_ns, inside in windows:
        names, kernel_launch = _named(events, inside, kernel_names)
        mine = slice(at, at + len(inside))
        found.append(
            Capture(thread, start_ns, stop_ns, inside, names, kernel_launch, known[mine], identity[mine].tobytes())
        )
        at += len(inside)
    return found


def _identities(events: pa.Table, launches: np.ndarray, op_at: np.ndarray) -> np.ndarray:
    """(op name, input dims and types, Python frame) of each launch as three integers per row."""
    name_codes, _ = codes(events, "name")
    op = np.where(op_at >= 0, name_codes[np.maximum(op_at, 0)], -1)
    shaped = op_shapes(events, np.maximum(op_at, 0))
    both = pc.binary_join_element_wise(
        pc.fill_null(shaped.column("input_dims"), ""), pc.fill_null(shaped.column("input_types"), ""), "\x1f"
    )
    shape = _value_codes(both)
    stack = ints(events, "stack_id")[launches] if "stack_id" in events.column_names else np.full(len(launches), -1)
    found: np.ndarray = np.stack([op, np.where(op_at >= 0, shape, -1), stack], axis=1).astype(np.int64)
    return found


def _capture_launch_calls(events: pa.Table) -> np.ndarray:
    """Runtime and driver launch calls that no device work correlates with (ran nothing)."""
    calls = is_in(events, "kind", (kinds.RUNTIME_CALL, kinds.DRIVER)) & _matches(events, LAUNCH)
    calls &= ~_matches(events, GRAPH_LAUNCH)
    work = is_in(events, "kind", DEVICE_WORK)
    at = positions(ints(events, "id"), ints(events, "launch_id")[work])
    calls[at[at >= 0]] = False
    found: np.ndarray = calls
    return found


def _named(events: pa.Table, launches: np.ndarray, kernel_names: set[str]) -> tuple[list[str | None], np.ndarray]:
    """The kernel each launch names (its ``kernel`` arg, else its op's name where that is one of
    ``kernel_names``), and whether it launches a kernel at all."""
    names: list[str | None] = [None] * len(launches)
    if "args" in events.column_names and len(launches):
        args = events.column("args").take(pa.array(launches)).cast(pa.string())
        found = pc.struct_field(pc.extract_regex(pc.fill_null(args, "{}"), _KERNEL_ARG), "value")
        names = [None if text is None else str(json.loads(text)) for text in found.to_pylist()]
    op_at = positions(ints(events, "id"), ints(events, "op_id")[launches])
    op_names = events.column("name").take(pa.array(np.maximum(op_at, 0))).cast(pa.string()).to_pylist()
    for k, (own, op, at) in enumerate(zip(names, op_names, op_at.tolist(), strict=True)):
        if own is None and at >= 0 and op in kernel_names:
            names[k] = str(op)  # Inductor wraps each launch in an op named as its kernel
    call_names = events.column("name").take(pa.array(launches)).cast(pa.string())
    copy = np.asarray(pc.match_substring_regex(call_names, COPY_LAUNCH).to_numpy(zero_copy_only=False), bool)
    return names, ~copy


def _known_kernels(events: pa.Table, op_at: np.ndarray) -> list[frozenset[str] | None]:
    """For the op of each capture-time launch (a position, -1: none), the kernels that ops of its
    name and input dims launched outside graphs in the trace (a warm-up before the capture, an
    eager step); None where no such op ran outside a graph."""
    known: list[frozenset[str] | None] = [None] * len(op_at)
    if not (op_at >= 0).any():
        return known
    ids, (name_codes, values) = ints(events, "id"), codes(events, "name")
    kernel = np.flatnonzero(is_in(events, "kind", (kinds.KERNEL,)))
    call = positions(ids, ints(events, "launch_id")[kernel])
    kernel = kernel[(call >= 0) & ~_matches(events, GRAPH_LAUNCH)[np.maximum(call, 0)]]
    eager_op = positions(ids, ints(events, "op_id")[kernel])
    same_name = (eager_op >= 0) & np.isin(name_codes[np.maximum(eager_op, 0)], name_codes[op_at[op_at >= 0]])
    kernel, eager_op = kernel[same_name], eager_op[same_name]
    if not len(kernel):
        return known
    ops = np.unique(np.r_[eager_op, op_at[op_at >= 0]])  # sorted: a position's place is its searchsorted
    dims_code = _value_codes(pc.fill_null(op_shapes(events, ops).column("input_dims"), ""))
    eager_dims = dims_code[np.searchsorted(ops, eager_op)]
    seen: dict[tuple[int, int], set[str]] = {}
    triples = np.unique(np.stack([name_codes[eager_op], eager_dims, name_codes[kernel]]), axis=1)
    for op_code, dims_at, kernel_code in triples.T.tolist():
        seen.setdefault((op_code, dims_at), set()).add(values[kernel_code])
    for k, at in enumerate(op_at.tolist()):
        if at >= 0 and (kernels := seen.get((int(name_codes[at]), int(dims_code[np.searchsorted(ops, at)])))):
            known[k] = frozenset(kernels)
    return known


def _value_codes(values: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """One integer per distinct string, for each row (encoded as one array: one dictionary)."""
    whole = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    found: np.ndarray = np.asarray(pc.dictionary_encode(whole).indices, dtype=np.int64)
    return found


def op_shapes(events: pa.Table, at: np.ndarray) -> pa.Table:
    """``input_dims`` and ``input_types`` (and ``concrete_inputs``) of the rows at ``at``, as strings;
    all null where the events carry neither shapes nor ``args`` (or no framework row had any)."""
    columns = shapes.source_columns(events)
    if not all(name in events.column_names for name in columns):
        return pa.table({name: pa.nulls(len(at), pa.string()) for name in shapes.FIELDS})
    found = shapes.input_shapes(events.select(columns).take(pa.array(at, pa.int64())))
    return pa.table({name: found.column(name).cast(pa.string()) for name in shapes.FIELDS})  # null-typed: none


def _kernel_names(events: pa.Table) -> set[str]:
    kernel_codes, values = codes(events, "name")
    present = np.unique(kernel_codes[is_in(events, "kind", (kinds.KERNEL,))])
    return {values[c] for c in present.tolist()}


def match(events: pa.Table) -> Matches:
    """Each piece of replayed device work of one rank's events, matched to a capture-time launch
    (found once per table inside ``reuse.reusing()``: three analyses ask)."""
    return reuse.cached(events, "graph_capture", lambda: _match(events))


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

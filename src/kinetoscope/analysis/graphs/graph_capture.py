"""CUDA/HIP graph captures in a trace: the launches recorded while a graph was captured.

A capture is ``cudaStreamBeginCapture`` ... ``cudaStreamEndCapture`` (``hipStream...``) on one
host thread; the launch calls on that thread in between were recorded with the ops, shapes and
Python frames around them, but ran nothing: no device work correlates with them. For each launch
this says what can check it against a replayed kernel (``graph_match``): the kernel it names
(HIP's ``kernel`` arg, or an op named as a kernel of the trace, as Inductor's ``triton_*``
launches are), the kernels ops of its name and input dims ran outside graphs (a warm-up), whether
it launches a kernel at all, and its op, shapes and frame as one identity.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kinetoscope.analysis._tables.column_arrays import codes, ints, string_mask
from kinetoscope.analysis._tables.id_lookup import id_positions
from kinetoscope.analysis._tables.masks import is_in
from kinetoscope.analysis._tables.selection import DEVICE_WORK, gathered
from kinetoscope.analysis.ops import shapes
from kinetoscope.model import graphs, kinds

GRAPH_LAUNCH = graphs.LAUNCH_PATTERN
BEGIN_CAPTURE = graphs.BEGIN_CAPTURE_PATTERN
END_CAPTURE = graphs.END_CAPTURE_PATTERN
LAUNCH = r"^(cuda|hip|cu)\w*(LaunchKernel|LaunchCooperativeKernel|Memcpy|Memset)"
COPY_LAUNCH = r"(Memcpy|Memset)"
_KERNEL_ARG = r'"kernel":\s*(?P<value>"(?:[^"\\]|\\.)*")'


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


def name_mask(events: pa.Table, pattern: str) -> np.ndarray:
    return string_mask(events, "name", lambda names: pc.match_substring_regex(names, pattern))


def captures(events: pa.Table) -> list[Capture]:
    """Every capture window of one rank's events, in start order, with its launch calls."""
    begin, end = np.flatnonzero(name_mask(events, BEGIN_CAPTURE)), np.flatnonzero(name_mask(events, END_CAPTURE))
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
    op_at = id_positions(events, ints(events, "op_id")[every])
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
    calls = is_in(events, "kind", (kinds.RUNTIME_CALL, kinds.DRIVER)) & name_mask(events, LAUNCH)
    calls &= ~name_mask(events, GRAPH_LAUNCH)
    work = is_in(events, "kind", DEVICE_WORK)
    at = id_positions(events, ints(events, "launch_id")[work])
    calls[at[at >= 0]] = False
    found: np.ndarray = calls
    return found


def _named(events: pa.Table, launches: np.ndarray, kernel_names: set[str]) -> tuple[list[str | None], np.ndarray]:
    """The kernel each launch names (its ``kernel`` arg, else its op's name where that is one of
    ``kernel_names``), and whether it launches a kernel at all."""
    names: list[str | None] = [None] * len(launches)
    if "args" in events.column_names and len(launches):
        args = gathered(events.column("args"), launches).cast(pa.string())
        found = pc.struct_field(pc.extract_regex(pc.fill_null(args, "{}"), _KERNEL_ARG), "value")
        names = [None if text is None else str(json.loads(text)) for text in found.to_pylist()]
    op_at = id_positions(events, ints(events, "op_id")[launches])
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
    name_codes, values = codes(events, "name")
    kernel = np.flatnonzero(is_in(events, "kind", (kinds.KERNEL,)))
    call = id_positions(events, ints(events, "launch_id")[kernel])
    kernel = kernel[(call >= 0) & ~name_mask(events, GRAPH_LAUNCH)[np.maximum(call, 0)]]
    eager_op = id_positions(events, ints(events, "op_id")[kernel])
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

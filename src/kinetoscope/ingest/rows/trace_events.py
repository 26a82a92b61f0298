"""One session's ``trace.json`` turned into rows of ``events``, ``flows``, ``frames`` and ``counters``.

Batches from the streaming reader are turned into columns at once. Nesting, stacks, steps
and flows need the whole session, so the rows wait in a spool (in memory, or in an Arrow
IPC file once they pass ``spool_bytes``) next to compact integer keys (about 56 bytes per
event); when the trace is read, the computed columns are added and the rows are written
batch by batch. Memory is thus bounded by the batch size, the spool limit, and the keys and
the columns computed from them (about 100 bytes per event at the peak, docs/performance.md).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from kinetoscope._freed_memory import release_freed_memory
from kinetoscope.dataset.schema import COUNTERS, EVENTS, FLOWS, FRAMES, TRACKS
from kinetoscope.format.kineto.json_head import paused_gc
from kinetoscope.format.problems import ProblemLog
from kinetoscope.ingest.rows import links
from kinetoscope.ingest.rows.allocations import MemoryEvents
from kinetoscope.ingest.rows.batch import Batch, CounterColumns, CounterRow, FlowPoint, IndexedRecord, SessionContext
from kinetoscope.ingest.rows.columns import KindCodes, columnize, dictionary_column
from kinetoscope.ingest.rows.nesting import FrameTree, Nesting, nest
from kinetoscope.model import device_processes, kinds, ops, tracks
from kinetoscope.model.scalars import NO_ID

DEFAULT_SPOOL_BYTES = 8 << 20
# A computed column of the events: whole, or made for a slice of rows as they are written.
Computed = np.ndarray | Callable[[slice], np.ndarray]
_KEYS = (
    *("id", "layer", "kind", "ts_ns", "end_ns", "track", "pid", "tid", "device", "stream"),
    *("external_id", "correlation", "is_python", "has_collective"),
)

# Sessions of at least this many events hand the heap's free pages back between the session-wide steps.
HAND_BACK_MIN_EVENTS = 500_000
# Keys whose values are ids of processes, threads, devices, streams and correlations, or the events'
# places in the trace (``id``, kept as the offset from the session's id base): most fit in 32 bits.
_NARROW_KEYS = frozenset({"id", "pid", "tid", "device", "stream", "external_id", "correlation"})
_INT32 = np.iinfo(np.int32)


class RowSpool:
    """Record batches kept in order: in memory up to ``limit_bytes``, then in an Arrow IPC stream file."""

    def __init__(self, spill_path: Path, limit_bytes: int) -> None:
        self._memory: list[pa.RecordBatch] = []
        self._bytes = 0
        self._limit = limit_bytes
        self._path = spill_path
        self._writer: Any = None
        self._writing = False  # the spill file is open for writing
        self.spilled = False

    def append(self, batch: pa.RecordBatch) -> None:
        if self._writer is None and self._bytes + batch.nbytes <= self._limit:
            self._memory.append(batch)
            self._bytes += batch.nbytes
            return
        if self._writer is None:
            # the stream format, as each batch has its own dictionaries (the file format allows one)
            self._writer = pa.ipc.new_stream(str(self._path), batch.schema)
            self.spilled = self._writing = True
        self._writer.write_batch(batch)

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        yield from self._memory
        if self._writer is None:
            return
        self._close_writer()
        with pa.OSFile(str(self._path)) as source:  # read, not mapped: each batch is freed once written
            yield from pa.ipc.open_stream(source)

    def _close_writer(self) -> None:
        if self._writing:
            self._writer.close()
            self._writing = False

    def close(self) -> None:
        self._close_writer()
        if self.spilled and self._path.exists():
            os.unlink(self._path)


@dataclass
class TraceStats:
    """What one trace contributed and what it lacked."""

    events: int = 0
    flows: int = 0
    correlation_flow_events: int = 0
    runtime_device_flows: int = 0
    overlaps: int = 0
    unbound_flow_ends: int = 0
    frames: int = 0
    counters: int = 0
    by_layer: dict[str, int] = field(default_factory=dict)


@dataclass
class _Gathered:
    keys: dict[str, list[np.ndarray]] = field(default_factory=lambda: {k: [] for k in _KEYS})
    python_names: dict[int, str] = field(default_factory=dict)
    call_stacks: dict[int, str] = field(default_factory=dict)
    flow_points: list[FlowPoint] = field(default_factory=list)
    counters: list[CounterColumns] = field(default_factory=list)
    step_marks: list[tuple[int, int, int]] = field(default_factory=list)
    op_collectives: dict[int, str] = field(default_factory=dict)
    thread_names: dict[tuple[int, int], str] = field(default_factory=dict)
    rows: int = 0


class TraceIngest:
    """Feed reader batches with ``add``; ``finish`` writes events and returns the other tables."""

    def __init__(self, ctx: SessionContext, problems: ProblemLog, spool: RowSpool) -> None:
        self.ctx = ctx
        self.problems = problems
        self.codes = KindCodes(problems, ctx.file)
        self.spool = spool
        self.stats = TraceStats()
        self.frames = FrameTree()
        self.memory = MemoryEvents()
        self.placer = device_processes.Placer()
        self._gathered = _Gathered()

    @property
    def held_key_bytes(self) -> int:
        """Bytes of the key columns held so far for the session-wide step."""
        return sum(batch.nbytes for batches in self._gathered.keys.values() for batch in batches)

    def add(self, batch: Sequence[IndexedRecord]) -> None:
        self.placer.place(batch)  # device tasks on a process named for the device (model.device_processes)
        with paused_gc():
            part = columnize(batch, self.ctx, self.codes, self.problems)
            self.keep(part)

    def keep(self, part: Batch) -> None:
        """Keep the columns of a batch ``columnize`` made (here by ``add``, or in a worker process)."""
        got = self._gathered
        offset = got.rows
        for key in _KEYS:
            values = part.keys[key] - self.ctx.id_base if key == "id" else part.keys[key]
            got.keys[key].append(_narrowed(key, values))
        python_rows = np.flatnonzero(part.keys["is_python"]).tolist()
        got.python_names.update(zip((offset + p for p in python_rows), part.python_names, strict=True))
        got.call_stacks.update({offset + p: s for p, s in part.call_stacks.items()})
        got.flow_points.extend(part.flow_points)
        if part.memory_counters is not None:
            got.counters.append(part.memory_counters)
        if part.counters:
            got.counters.append(CounterColumns.of_rows(part.counters))
        got.step_marks.extend(part.step_marks)
        got.op_collectives.update({offset + p: c for p, c in part.op_collectives.items()})
        got.thread_names.update(part.thread_names)
        self.stats.correlation_flow_events += part.correlation_flows
        self.memory.extend(*part.memory_events)
        got.rows += part.rows.num_rows
        if part.rows.num_rows:
            self.spool.append(part.rows)

    def finish(self, write_events: Callable[[pa.RecordBatch], None]) -> dict[str, pa.Table]:
        """Write the events (with depth, parent, stack, step) and return flows and counters.

        The frame tree (``self.frames``) stays open for snapshot stacks; ``frames_table`` closes it.
        """
        got = self._gathered
        # the batches' keys were small blocks of the heap: their pages go as each key is joined
        keys = _joined_keys(got.keys, self._hand_back)
        # the tracks first: the process, thread, device and stream columns go before the nesting starts
        found = tracks.found(keys)
        _drop(keys, "pid", "tid", "device", "stream")
        frames = self.frames
        nesting = nest(
            keys["track"],
            keys["ts_ns"],
            keys["end_ns"],
            python_names=got.python_names,
            call_stacks=got.call_stacks,
            frames=frames,
        )
        if not got.flow_points:  # only the flow finder reads these again: 16 bytes per event freed now
            nesting.order = np.empty(0, np.int64)
            _drop(keys, "track")
        self._hand_back()  # what the nesting freed (its per-track arrays: small blocks of the heap)
        edges, launcher = links.launch_edges(keys)
        self.stats.runtime_device_flows = sum(
            len(s) for s, k in zip(edges.src, edges.kind, strict=True) if k == links.RUNTIME_DEVICE
        )
        op = ops.op_of(nesting.parent, keys["kind"], launcher)
        links.op_edges(edges, keys, op, launcher)
        self.stats.unbound_flow_ends = _flow_event_edges(got.flow_points, keys, nesting, edges)
        # Each whole-session column costs 1 to 8 bytes per event: those no later step reads go now.
        nesting.order = np.empty(0, np.int64)
        _drop(keys, "track", "external_id", "correlation", "is_python")
        # self time before the steps and the lanes: its copies are the step's largest (about 30 bytes per event)
        self_time_ns = ops.self_ns(keys["end_ns"] - keys["ts_ns"], nesting.parent, keys["kind"])
        step = links.steps(keys["ts_ns"], keys["layer"], launcher, got.step_marks)
        ids = _EventIds(keys["id"], self.ctx.id_base)
        self._hand_back()  # what links and ops freed, before the lanes are packed
        placed = tracks.placed(found, keys, nesting.depth)
        del found
        base = self.ctx.id_base
        # Columns made batch by batch as the rows are written (whole, they cost 8 bytes per event each).
        computed: dict[str, Computed] = {
            "track_id": lambda rows: placed.of_row[rows].astype(np.int64) + base,
            "lane": placed.lane,
            "stack_id": lambda rows: _ids_of_nodes(nesting.stack_node[rows], base),
            "depth": nesting.depth,
            "parent_id": lambda rows: ids.of_rows(nesting.parent[rows]),
            "op_id": lambda rows: ids.of_rows(op[rows]),
            "launch_id": lambda rows: ids.of_rows(launcher[rows]),
            "self_ns": self_time_ns,
            "step": step,
        }
        launched = _launched_collectives(keys, op, got.op_collectives)
        self._hand_back()  # what nesting, links and tracks freed: the rows are written next
        self._write_rows(computed, launched, write_events)
        self._count(keys, nesting.overlaps)
        return {
            FLOWS.name: self._flows(edges, ids),
            COUNTERS.name: self._counters(got.counters),
            TRACKS.name: tracks_table(placed, got.thread_names, self.ctx),
        }

    def _hand_back(self) -> None:
        """The heap's free pages handed back to the system, for a session large enough that they
        matter (each call costs a walk of the heap: about a millisecond per 100 MB held)."""
        if self._gathered.rows >= HAND_BACK_MIN_EVENTS:
            release_freed_memory()

    def _write_rows(
        self, computed: dict[str, Computed], launched: dict[int, str], write: Callable[[pa.RecordBatch], None]
    ) -> None:
        schema = EVENTS.file_schema()
        offset = 0
        for rows in self.spool:
            end = offset + rows.num_rows
            columns = {name: rows.column(name) for name in rows.schema.names}
            if any(offset <= row < end for row in launched):
                columns["collective"] = _with_collectives(rows.column("collective"), launched, offset)
            columns.update({name: pa.array(_rows_of(values, offset, end)) for name, values in computed.items()})
            columns["session"] = repeated(self.ctx.session, rows.num_rows)
            write(pa.RecordBatch.from_arrays([columns[f.name] for f in schema], schema=schema))
            offset = end

    def _count(self, keys: dict[str, np.ndarray], overlaps: int) -> None:
        stats = self.stats
        stats.events = len(keys["id"])
        stats.overlaps = overlaps
        codes = np.bincount(keys["layer"].astype(np.int64), minlength=3) if stats.events else np.zeros(3, np.int64)
        stats.by_layer = {name: int(codes[i]) for i, name in enumerate(("framework", "runtime", "device"))}

    def _flows(self, edges: links.Edges, ids: _EventIds) -> pa.Table:
        self.stats.flows = edges.count()
        schema = FLOWS.file_schema()
        if not edges.src:
            return schema.empty_table()
        pair = np.concatenate([np.full(len(s), i, np.int32) for i, s in enumerate(edges.src)])
        return pa.table(
            {
                "src_id": ids.at(np.concatenate(edges.src)),
                "dst_id": ids.at(np.concatenate(edges.dst)),
                "kind": _labels(edges.kind, pair),
                "found_by": _labels(edges.found_by, pair),
            },
            schema=schema,
        )

    def frames_table(self) -> pa.Table:
        self.stats.frames = len(self.frames)
        return frames_table(self.frames, self.ctx.id_base)

    def _counters(self, parts: list[CounterColumns]) -> pa.Table:
        self.stats.counters = sum(map(len, parts))
        return counter_columns_table(parts, self.ctx.session)


def _flow_event_edges(
    points: list[FlowPoint], keys: dict[str, np.ndarray], nesting: Nesting, edges: links.Edges
) -> int:
    """``links.flow_event_edges``, its slice finder (sorted copies of the track and start columns, 16
    bytes per event) made only for a trace with flow events, and freed on return."""
    if not points:
        return 0
    finder = links.SliceFinder(keys["track"], keys["ts_ns"], keys["end_ns"], nesting.parent, nesting.order)
    return links.flow_event_edges(points, finder, edges)


def _narrowed(key: str, values: np.ndarray) -> np.ndarray:
    """A batch's key column as int32 where it is one of ``_NARROW_KEYS`` and every value fits: half
    the bytes while the trace is read (a batch with a wider value stays int64, and joining int32 and
    int64 batches gives int64, so every value is kept as it is)."""
    if key not in _NARROW_KEYS or values.dtype != np.int64 or not len(values):
        return values
    if _INT32.min <= int(values.min()) and int(values.max()) <= _INT32.max:
        return values.astype(np.int32)
    return values


def _joined_keys(batches: dict[str, list[np.ndarray]], hand_back: Callable[[], None]) -> dict[str, np.ndarray]:
    """Each key's batches joined into one column, one key at a time, each key's batches freed as soon
    as it is joined (``batches`` is left empty) and their pages handed back (``hand_back``): all at
    once, every key was held twice (about 90 bytes per event more at the peak), and the freed batches
    stayed resident until the last key was joined (60 more)."""
    keys = {}
    for name in list(batches):
        parts = batches.pop(name)
        keys[name] = np.concatenate(parts) if parts else np.empty(0, np.int64)
        del parts
        hand_back()
    return keys


def _drop(keys: dict[str, np.ndarray], *names: str) -> None:
    for name in names:
        keys.pop(name, None)


def _rows_of(values: Computed, start: int, end: int) -> np.ndarray:
    return values(slice(start, end)) if callable(values) else values[start:end]


@dataclass
class _EventIds:
    """The rows' event ids, held as their offsets from the session's id base (the record's place in
    the trace: int32 where a batch's fit, half the bytes of the ids themselves)."""

    offsets: np.ndarray
    base: int

    def at(self, rows: np.ndarray) -> np.ndarray:
        """The event id of each row position of ``rows``."""
        ids: np.ndarray = self.offsets[rows].astype(np.int64) + self.base
        return ids

    def of_rows(self, rows: np.ndarray) -> np.ndarray:
        """The event id of each row position (NO_ID where there is none: -1)."""
        return np.where(rows >= 0, self.at(np.maximum(rows, 0)), NO_ID)


def _ids_of_nodes(nodes: np.ndarray, base: int) -> np.ndarray:
    return np.where(nodes >= 0, nodes.astype(np.int64) + base, NO_ID)


def _launched_collectives(
    keys: dict[str, np.ndarray], op: np.ndarray, op_collectives: dict[int, str]
) -> dict[int, str]:
    """Device rows no other source names a collective for, launched by an op that performs one
    (symmetric-memory and custom all-reduce kernels): row position -> that op's collective."""
    if not op_collectives:
        return {}
    device = np.flatnonzero((keys["layer"] == kinds.LAYER_CODES[kinds.DEVICE]) & ~keys["has_collective"] & (op >= 0))
    pairs = zip(device.tolist(), op[device].tolist(), strict=True)
    return {row: name for row, at in pairs if (name := op_collectives.get(at))}


def _with_collectives(column: pa.Array, launched: dict[int, str], offset: int) -> pa.Array:
    values = column.to_pylist()
    for row, name in launched.items():
        if offset <= row < offset + len(values):
            values[row - offset] = name
    return dictionary_column(values)


def repeated(text: str, count: int) -> pa.Array:
    """A string column of ``count`` times ``text`` (made in Arrow, not from a list of ``count`` references)."""
    return pa.repeat(pa.scalar(text, pa.string()), count)


def tracks_table(placed: tracks.Tracks, thread_names: dict[tuple[int, int], str], ctx: SessionContext) -> pa.Table:
    """The ``tracks`` rows of one session, in display order (threads, their runtime tracks, devices)."""
    count = len(placed.lanes)
    device_side = placed.tid < 0  # device streams, synchronizations and allocators, after the host threads
    order = np.lexsort((placed.stream, placed.group, placed.layer, placed.tid, placed.device, placed.pid, device_side))
    sort = np.empty(count, dtype=np.int32)
    sort[order] = np.arange(count, dtype=np.int32)
    layer_names = np.asarray(kinds.LAYERS, dtype=object)[placed.layer]
    return pa.table(
        {
            "track_id": np.arange(count, dtype=np.int64) + ctx.id_base,
            "session": repeated(ctx.session, count),
            "layer": dictionary_column(layer_names.tolist()),
            "name": pa.array(placed.names(thread_names), pa.string()),
            "pid": np.where(placed.layer == kinds.LAYER_CODES[kinds.DEVICE], ctx.host_pid, placed.pid),
            "tid": placed.tid,
            "device": placed.device.astype(np.int32),
            "stream": placed.stream,
            "sort": sort,
            "lanes": placed.lanes.astype(np.int32),
        },
        schema=TRACKS.file_schema(),
    )


def _labels(per_pair: list[str], pair: np.ndarray) -> pa.Array:
    """A dictionary column of one label per edge, from one label per (src, dst) array pair."""
    distinct = {label: code for code, label in enumerate(dict.fromkeys(per_pair))}
    codes = np.asarray([distinct[label] for label in per_pair], np.int32)[pair]
    return pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(list(distinct), pa.string()))


def frames_table(frames: FrameTree, base: int) -> pa.Table:
    """The ``frames`` rows of a frame tree whose node ids start at ``base``."""
    parent = np.asarray(frames.parent, np.int64)
    return pa.table(
        {
            "stack_id": np.arange(len(frames), dtype=np.int64) + base,
            "parent_id": np.where(parent >= 0, parent + base, NO_ID),
            "name": pa.array(frames.name, pa.string()),
            "file": pa.array(frames.file, pa.string()),
            "line": pa.array(frames.line, pa.int32()),
        },
        schema=FRAMES.file_schema(),
    )


def counter_table(rows: list[CounterRow], session: str) -> pa.Table:
    """The ``counters`` file rows for ``(name, ts_ns, value, unit, device)`` tuples."""
    return counter_columns_table([CounterColumns.of_rows(rows)], session)


def counter_columns_table(parts: list[CounterColumns], session: str) -> pa.Table:
    """The ``counters`` file rows of ``parts``, in order."""
    count = sum(map(len, parts))
    return pa.table(
        {
            "session": repeated(session, count),
            "name": dictionary_column([n for part in parts for n in part.name]),
            "ts_ns": pa.array(_joined([p.ts_ns for p in parts], np.int64)),
            "value": pa.array(_joined([p.value for p in parts], np.float64)),
            "unit": dictionary_column([u for part in parts for u in part.unit]),
            "device": pa.array(_joined([p.device for p in parts], np.int64), pa.int32()),
        },
        schema=COUNTERS.file_schema(),
    )


def _joined(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.zeros(0, dtype)

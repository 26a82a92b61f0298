"""One batch of Kineto events (records from the trace reader) turned into columns.

Slices (``X``) and instants (``i``/``I``) become rows of the ``events`` table; flow events
(``s``/``t``/``f``) become flow endpoints, bound to slices once the whole session is read;
counter events (``C``) and allocator totals of ``[memory]`` instants become counter rows.
Everything here works column by column (list comprehensions and numpy), never event by
event through a chain of function calls: this is the hot path of ingest. Args are never
decoded whole: the ``args`` column is the recorded args text (re-spaced), and the dozen keys
ingest reads come from one typed decode per batch (``ARG_KEYS``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from typing import Any

import numpy as np
import pyarrow as pa

from kinetoscope.format.kineto import trace_records
from kinetoscope.format.kineto.trace_records import ArgKeys, TraceRecord, or_default
from kinetoscope.format.problems import ProblemLog
from kinetoscope.model import collectives as model_collectives
from kinetoscope.model import kinds
from kinetoscope.model.execution import memory_device
from kinetoscope.model.scalars import NO_ID, TS_US_LIMIT, to_int, us_to_ns, wrap_int64

COMPLETE_PHASES = frozenset({"X"})
INSTANT_PHASES = frozenset({"i", "I"})
FLOW_PHASES = frozenset({"s", "t", "f"})
SIDE_PHASES = FLOW_PHASES | {"C", "M"}
THREAD_NAME = "thread_name"
IndexedRecord = tuple[int, TraceRecord]
# The args keys ingest reads; everything else stays in the args text.
ARG_KEYS = ArgKeys(
    external_id="External id",
    external_id_lower="external id",
    correlation="correlation",
    device="device",
    stream="stream",
    collective="Collective name",
    call_stack="Call stack",
    total_allocated="Total Allocated",
    total_reserved="Total Reserved",
    device_id="Device Id",
    device_type="Device Type",
    addr="Addr",
    bytes="Bytes",
)
DEVICE_TRACK_BIT = 1 << 62

# Problem kinds ingest records on top of the reader's.
UNKNOWN_CATEGORY = "unknown_category"
NEGATIVE_DURATION = "negative_duration"
BAD_FIELD = "bad_field"


@dataclass(frozen=True)
class SessionContext:
    """What every row of a session shares."""

    file: str  # trace path, for problem records
    rank: int
    slot: int
    session: str
    base_ns: int  # added to ts*1000 (Kineto's baseTimeNanoseconds; 0 for epoch-µs traces)
    host_pid: int

    @property
    def id_base(self) -> int:
        return ((self.rank & 0x7FFFFF) << 40) | ((self.slot & 0xFF) << 32)


# (flow id, category, name, phase, ts_ns, pid, tid, binds to the enclosing slice)
FlowPoint = tuple[int, str, str, str, int, int, int, bool]
# (name, ts_ns, value, unit, device)
CounterRow = tuple[str, int, float, str, int]


@dataclass(frozen=True)
class CounterColumns:
    """Counter rows as columns (the allocator totals of a batch are made this way, not row by row)."""

    name: list[str]
    ts_ns: np.ndarray  # int64
    value: np.ndarray  # float64
    unit: list[str]
    device: np.ndarray  # int64

    @classmethod
    def of_rows(cls, rows: list[CounterRow]) -> CounterColumns:
        name, ts_ns, value, unit, device = (list(c) for c in zip(*rows, strict=True)) if rows else ([],) * 5
        return cls(name, np.asarray(ts_ns, np.int64), np.asarray(value, np.float64), unit, np.asarray(device, np.int64))

    def __len__(self) -> int:
        return len(self.name)


@dataclass
class Batch:
    """The rows and side records one reader batch yields."""

    rows: pa.RecordBatch  # events columns known without the whole session (see ROW_FIELDS)
    keys: dict[str, np.ndarray]  # compact per-row keys for nesting and links
    python_names: list[str]  # names of python_function rows, in row order
    call_stacks: dict[int, str]  # row position -> legacy "Call stack" string
    flow_points: list[FlowPoint] = field(default_factory=list)
    counters: list[CounterRow] = field(default_factory=list)  # counter events (after memory_counters)
    memory_counters: CounterColumns | None = None  # allocator totals of [memory] instants
    # Flow events whose ids are correlation ids: the edges come from the correlation column instead.
    correlation_flows: int = 0
    step_marks: list[tuple[int, int, int]] = field(default_factory=list)  # (start ns, end ns, N)
    thread_names: dict[tuple[int, int], str] = field(default_factory=dict)  # (pid, tid) -> thread_name metadata
    # Row position -> collective of ops that launch collective kernels (``symm_mem::*``, ``vllm::all_reduce``).
    op_collectives: dict[int, str] = field(default_factory=dict)
    # Allocator events: (addresses, bytes as the trace spells them, ts ns, ids).
    memory_events: tuple[list[Any], list[Any], list[int], list[int]] = field(default_factory=lambda: ([], [], [], []))

    def counter_rows(self) -> list[CounterRow]:
        """Every counter row of the batch as a tuple: allocator totals, then counter events."""
        memory = self.memory_counters
        if memory is None:
            return list(self.counters)
        columns = (memory.name, memory.ts_ns.tolist(), memory.value.tolist(), memory.unit, memory.device.tolist())
        return [*zip(*columns, strict=True), *self.counters]


ROW_FIELDS = pa.schema(
    [
        ("id", pa.int64()),
        ("layer", pa.dictionary(pa.int32(), pa.string())),
        ("kind", pa.dictionary(pa.int32(), pa.string())),
        ("name", pa.dictionary(pa.int32(), pa.string())),
        ("category", pa.dictionary(pa.int32(), pa.string())),
        ("ts_ns", pa.int64()),
        ("dur_ns", pa.int64()),
        ("pid", pa.int64()),
        ("tid", pa.int64()),
        ("device", pa.int32()),
        ("stream", pa.int64()),
        ("correlation", pa.int64()),
        ("external_id", pa.int64()),
        ("collective", pa.dictionary(pa.int32(), pa.string())),
        ("args", pa.string()),
    ]
)


def _ids(values: list[Any] | tuple[Any, ...], default: int = NO_ID) -> np.ndarray:
    """int64 ids; values beyond int64 (Kineto ids above 2^63) wrap to their two's complement."""
    try:
        fast: np.ndarray = np.fromiter(values, np.int64, len(values))  # as np.asarray, without its shape discovery
        return fast
    except (TypeError, ValueError, OverflowError):
        out = [v if type(v) is int and -(1 << 63) <= v < (1 << 63) else _wrap(v, default) for v in values]
        return np.asarray(out, dtype=np.int64)


def _wrap(value: Any, default: int) -> int:
    return wrap_int64(to_int(value, default))


def epoch_ns(ts_us: np.ndarray, base_ns: int) -> np.ndarray:
    """Kineto µs timestamps (exact in float64 below 2^53) to epoch ns without losing ns digits."""
    whole = np.floor(ts_us)
    frac_ns = np.rint((ts_us - whole) * 1000.0).astype(np.int64)
    out: np.ndarray = whole.astype(np.int64) * 1000 + frac_ns + base_ns
    return out


def _floats(values: list[Any], ctx: SessionContext, index: list[int], what: str, problems: ProblemLog) -> np.ndarray:
    """float64 of each value; absent (None) is 0, anything else that is not a number is 0 and a problem."""
    try:
        out: np.ndarray = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        out = np.zeros(len(values), dtype=np.float64)
        for pos, value in enumerate(values):
            try:
                out[pos] = 0.0 if value is None else float(value)
            except (TypeError, ValueError):
                problems.add(ctx.file, f"event {index[pos]}", BAD_FIELD, f"{what} {value!r} is not a number; used 0")
    with np.errstate(invalid="ignore"):
        bad = ~(np.abs(out) < TS_US_LIMIT)  # NaN (also None: absent), inf (1e400 reads as inf), 1e308
    for pos in np.flatnonzero(bad).tolist():
        value = values[pos]
        if value is not None:
            message = f"{what} {value!r} is {_beyond(value)}; used 0"
            problems.add(ctx.file, f"event {index[pos]}", BAD_FIELD, message)
        out[pos] = 0.0
    return out


def _beyond(value: Any) -> str:
    try:
        infinite = math.isinf(float(value))
    except (TypeError, ValueError, OverflowError):
        infinite = True
    return "beyond float64" if infinite else "not a finite number within 2^62 ns"


def args_column(texts: list[bytes]) -> pa.Array:
    """The args text of each row as a string column (bytes that are not UTF-8 replaced by U+FFFD)."""
    try:
        return pa.array(texts, pa.binary()).cast(pa.string())
    except pa.ArrowInvalid:
        return pa.array([t.decode("utf-8", "replace") for t in texts], pa.string())


def _args(records: list[TraceRecord]) -> tuple[pa.Array, list[Any]]:
    """The args column (compact text, ``{}`` when absent or not an object) and the ``ARG_KEYS``
    of each record: re-spaced and decoded batch by batch when every args value is an object, else
    record by record."""
    codec = trace_records.codec()
    found = codec.compact_args_array(records)
    column = None if found is None else _object_texts(found[1])
    if found is not None and column is not None:
        return column, codec.known_args_of_array(found[0], found[1], ARG_KEYS)
    texts = codec.compact_args(records)
    return args_column(texts), codec.known_args(texts, ARG_KEYS)


def _object_texts(texts: list[Any]) -> pa.Array | None:
    """``texts`` (bytes-like) as a string column, built from one joined buffer; None when one of
    them is not a JSON object or is not UTF-8 (the record-by-record path then says what it did)."""
    lengths = np.fromiter(map(len, texts), np.int64, len(texts))
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if offsets[-1] >= 1 << 31:
        return None
    body = b"".join(texts)
    starts = np.frombuffer(body, np.uint8)[offsets[:-1][lengths > 0]] if len(body) else np.zeros(0, np.uint8)
    if len(starts) != len(texts) or not bool(np.all(starts == ord("{"))):
        return None
    column = pa.StringArray.from_buffers(len(texts), pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(body))
    try:
        column.validate(full=True)  # the UTF-8 of every value (as a cast from binary checks it)
    except pa.ArrowInvalid:
        return None
    return column


def dictionary_column(texts: list[str]) -> pa.DictionaryArray:
    """Strings as a dictionary column, coded in order of first appearance (as Arrow's
    ``dictionary_encode`` codes them, without a hash of every string in Arrow nor the import of
    ``pyarrow.compute`` that ``dictionary_encode`` costs a process)."""
    return _Encoded.of(texts).array


def _or_no_id(value: Any) -> Any:
    return NO_ID if value is None else value


def _split(kept: list[IndexedRecord]) -> tuple[list[int], list[TraceRecord]]:
    """The event indexes and the records of ``kept``, taken apart in C rather than by two comprehensions."""
    if not kept:
        return [], []
    index, records = zip(*kept, strict=True)
    return list(index), list(records)


def _texts(values: list[Any]) -> list[str]:
    """Names and categories as strings: "" when absent, other JSON values as their text."""
    if set(map(type, values)) <= {str}:
        return values
    return ["" if v is None else v if type(v) is str else str(v) for v in values]


class KindCodes:
    """Category -> (layer, kind) codes from the model, with unknown categories recorded once each."""

    def __init__(self, problems: ProblemLog, file: str) -> None:
        self._known: dict[str, tuple[int, int]] = {}
        self._problems = problems
        self._file = file

    def code(self, category: str) -> tuple[int, int]:
        found = self._known.get(category)
        if found is None:
            rule = kinds.CATEGORIES.get(category)
            if rule is None and not category:  # no category (legacy allocator events): placed by name
                rule = kinds.UNKNOWN
            elif rule is None:
                rule = kinds.UNKNOWN
                message = f"unknown category {category!r}: kept as a framework marker"
                self._problems.add(self._file, "category", UNKNOWN_CATEGORY, message)
            found = self._known[category] = (kinds.LAYER_CODES[rule[0]], kinds.KIND_CODES[rule[1]])
        return found


def _profiler_marker(pid: Any) -> bool:
    """The profiler's own rows ("Spans", "Traces" processes, category "Trace") carry a name, not a pid."""
    return type(pid) is not int and type(pid) is str and not pid.strip().isdigit()


# Per distinct name, once per process rather than once per batch (names repeat in every batch).
_spelled = functools.lru_cache(maxsize=1 << 16)(model_collectives.spelled)
_of_op = functools.lru_cache(maxsize=1 << 16)(model_collectives.of_op)


def collectives(names: _Encoded, args: list[Any], on_device: np.ndarray) -> _Encoded:
    """The collective each row is part of: its ``Collective name`` metadata, else (device rows and
    host collective annotations) the operation its name spells (``ncclDevKernel_AllReduce_...``,
    ``gloo:all_reduce`` -> ``allreduce``); "" for the other rows."""
    found: dict[int, str] = {}
    candidates = on_device | names.mask(lambda n: n.startswith(model_collectives.METADATA_OPS))
    for pos in np.flatnonzero(candidates).tolist():
        value = args[pos].collective
        if type(value) is str:
            found[pos] = value
    spelled = [_spelled(v) for v in names.values]
    for pos in np.flatnonzero(on_device | names.mask(kinds.is_host_collective)).tolist():
        if not found.get(pos):
            found[pos] = spelled[names.codes[pos]]
    return _Encoded.sparse(len(args), found)


def columnize(batch: Sequence[IndexedRecord], ctx: SessionContext, codes: KindCodes, problems: ProblemLog) -> Batch:
    """Rows, keys and side records of one reader batch (rows: complete events, then instants)."""
    phases = _phase_classes([r.ph for _, r in batch])
    complete = np.flatnonzero(phases == _COMPLETE)
    rows = np.concatenate([complete, np.flatnonzero(phases == _INSTANT)]).tolist()
    out = _rows(list(map(batch.__getitem__, rows)), len(complete), ctx, codes, problems)
    if bool(np.any(phases >= _FLOW_START)):
        _side_records(batch, phases, out, ctx, problems)
    return out


# What an event is, by its phase: a row (slice or instant), a side record, or neither.
_OTHER, _COMPLETE, _INSTANT, _FLOW_START, _FLOW_OTHER, _COUNTER, _METADATA = range(7)
_PHASE_CLASS = {
    **dict.fromkeys(COMPLETE_PHASES, _COMPLETE),
    **dict.fromkeys(INSTANT_PHASES, _INSTANT),
    **dict.fromkeys(FLOW_PHASES, _FLOW_OTHER),
    "s": _FLOW_START,
    "C": _COUNTER,
    "M": _METADATA,
}


def _phase_classes(phases: list[Any]) -> np.ndarray:
    """The class of each event's phase (``_PHASE_CLASS``; ``_OTHER`` for any other value), looked
    up in one C-level pass instead of one comparison chain per event and per use."""
    lookup = _PHASE_CLASS.get
    try:
        return np.fromiter(map(lookup, phases, repeat(_OTHER)), np.int8, len(phases))
    except TypeError:  # an unhashable phase (a list, an object)
        return np.asarray([lookup(p, _OTHER) if type(p) is str else _OTHER for p in phases], np.int8)


def _profiler_rows(categories: list[str], pids: list[Any]) -> np.ndarray | None:
    """Which slices and instants are the profiler's own markers (category "Trace", or a pid that
    is a name): None when none is, as two C-level passes find in the common case."""
    if "Trace" not in categories and set(map(type, pids)) <= {int}:
        return None
    return np.asarray([c == "Trace" or _profiler_marker(p) for c, p in zip(categories, pids, strict=True)], bool)


def _records_of(batch: Sequence[IndexedRecord], positions: np.ndarray) -> list[TraceRecord]:
    return [batch[p][1] for p in positions.tolist()]


def _side_records(
    batch: Sequence[IndexedRecord], phases: np.ndarray, out: Batch, ctx: SessionContext, problems: ProblemLog
) -> None:
    """Counters, and flow endpoints (flows whose ids are correlation ids are only counted)."""
    names = [r for r in _records_of(batch, np.flatnonzero(phases == _METADATA)) if r.name == THREAD_NAME]
    if names:
        out.thread_names.update(_thread_names(names))
    flow_rows = np.flatnonzero((phases == _FLOW_START) | (phases == _FLOW_OTHER))
    flows = _records_of(batch, flow_rows)
    by_correlation = _launch_flows([r.cat for r in flows])
    out.correlation_flows = int(np.count_nonzero(by_correlation & (phases[flow_rows] == _FLOW_START)))
    out.flow_points = [_flow_point(flows[p], ctx) for p in np.flatnonzero(~by_correlation).tolist()]
    counters = np.flatnonzero(phases == _COUNTER)
    if len(counters):
        out.counters.extend(_counter_rows([batch[p] for p in counters.tolist()], ctx, problems))


def _launch_flows(categories: list[Any]) -> np.ndarray:
    """Whether each flow's category is one of the launch flows (whose ids are correlation ids)."""
    try:
        return np.fromiter(map(kinds.LAUNCH_FLOW_CATEGORIES.__contains__, categories), bool, len(categories))
    except TypeError:  # an unhashable category
        return np.asarray([type(c) is str and c in kinds.LAUNCH_FLOW_CATEGORIES for c in categories], bool)


@dataclass(frozen=True)
class _Encoded:
    """A string column dictionary-encoded once: per-row codes and the distinct values."""

    array: pa.DictionaryArray
    codes: np.ndarray
    values: list[str]

    @classmethod
    def of(cls, texts: list[str]) -> _Encoded:
        """Codes in order of first appearance, as ``dictionary_encode`` gives them; a dict of the
        distinct values codes them about three times faster than Arrow's hashing of every string."""
        found: dict[str, int] = {}
        code = found.setdefault
        codes = np.fromiter([code(text, len(found)) for text in texts], np.int32, len(texts))
        values = list(found)
        array = pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(values, pa.string()))
        return cls(array, codes, values)

    @classmethod
    def sparse(cls, count: int, found: dict[int, str]) -> _Encoded:
        """``count`` rows of "" but those in ``found`` (row position -> value), coded without a
        pass over every row: "" is code 0, the other values follow in row order."""
        distinct = {"": 0}
        codes = np.zeros(count, np.int32)
        for pos, text in sorted(found.items()):
            codes[pos] = distinct.setdefault(text, len(distinct))
        values = list(distinct)
        array = pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(values, pa.string()))
        return cls(array, codes, values)

    def mask(self, keep: Callable[[str], bool]) -> np.ndarray:
        """Rows whose value satisfies ``keep`` (tested once per distinct value)."""
        wanted = np.asarray([keep(v) for v in self.values], dtype=bool)
        return wanted[self.codes] if len(self.codes) else np.zeros(0, dtype=bool)


def _rows(
    kept: list[IndexedRecord], complete: int, ctx: SessionContext, codes: KindCodes, problems: ProblemLog
) -> Batch:
    """Rows of ``kept`` (but the profiler's own markers): its first ``complete`` events are slices,
    the rest instants."""
    index, records = _split(kept)
    categories, pid_values = _texts([r.cat for r in records]), [r.pid for r in records]
    markers = _profiler_rows(categories, pid_values)
    if markers is not None and markers.any():  # rare (a few per trace): the batch is read again without them
        rest = [k for k, marker in zip(kept, markers.tolist(), strict=True) if not marker]
        return _rows(rest, complete - int(np.count_nonzero(markers[:complete])), ctx, codes, problems)
    names = _texts([r.name for r in records])
    name_col, cat_col = _Encoded.of(names), _Encoded.of(categories)
    args_col, args = _args(records)
    pids = _ids(pid_values)
    tids = _ids([r.tid for r in records])
    ts_ns = epoch_ns(_floats([r.ts for r in records], ctx, index, "ts", problems), ctx.base_ns)
    dur_ns = np.rint(_floats([r.dur for r in records], ctx, index, "dur", problems) * 1000.0).astype(np.int64)
    _clamp_negative(dur_ns, index, ctx, problems)
    instant = np.arange(len(kept)) >= complete
    layer, kind = _layer_kind_codes(cat_col, codes)
    on_host = layer == kinds.LAYER_CODES[kinds.FRAMEWORK]
    memory = name_col.mask(lambda n: n == kinds.MEMORY_EVENT) & instant & on_host
    host_collective = name_col.mask(kinds.is_host_collective) & ~instant & on_host
    _name_rules(layer, kind, memory, host_collective)
    on_device = layer == kinds.LAYER_CODES[kinds.DEVICE]
    device, stream = _device_stream(args, on_device, kind == kinds.KIND_CODES[kinds.SYNC], pids, tids)
    device[memory] = _memory_devices(args, memory)
    external = _ids([x if (x := a.external_id) is not None else _or_no_id(a.external_id_lower) for a in args])
    correlation = _ids([NO_ID if (x := a.correlation) is None else x for a in args])
    ids = np.asarray(index, dtype=np.int64) + ctx.id_base
    collective_col = collectives(name_col, args, on_device)
    rows = pa.RecordBatch.from_arrays(
        [
            pa.array(ids),
            pa.DictionaryArray.from_arrays(pa.array(layer.astype(np.int32)), pa.array(kinds.LAYERS)),
            pa.DictionaryArray.from_arrays(pa.array(kind.astype(np.int32)), pa.array(kinds.KINDS)),
            name_col.array,
            cat_col.array,
            pa.array(ts_ns),
            pa.array(dur_ns),
            pa.array(np.where(on_device, ctx.host_pid, pids)),
            pa.array(np.where(on_device, NO_ID, tids)),
            pa.array(device),
            pa.array(stream),
            pa.array(correlation),
            pa.array(external),
            collective_col.array,
            args_col,
        ],
        schema=ROW_FIELDS,
    )
    track = np.where(
        on_device,
        DEVICE_TRACK_BIT | ((device.astype(np.int64) & 0x3FFFFFFF) << 32) | (stream & 0xFFFFFFFF),
        ((pids & 0x3FFFFFFF) << 32) | (tids & 0xFFFFFFFF),
    )
    is_python = kind == kinds.KIND_CODES[kinds.PYTHON]
    keys = {
        "id": ids,
        "layer": layer,
        "kind": kind,
        "ts_ns": ts_ns,
        "end_ns": ts_ns + dur_ns,
        "track": track,
        "pid": pids,
        "tid": tids,
        "device": device.astype(np.int64),
        "stream": stream,
        "external_id": external,
        "correlation": correlation,
        "is_python": is_python,
        "has_collective": collective_col.mask(bool),
    }
    python_rows = np.flatnonzero(is_python).tolist()
    out = Batch(rows, keys, [names[p] for p in python_rows], _call_stacks(args, ~is_python))
    memory_rows = np.flatnonzero(memory).tolist()
    out.memory_counters = _memory_counters(memory_rows, args, ts_ns)
    out.memory_events = _memory_events(memory_rows, args, ts_ns, ids)
    out.step_marks = _step_marks(names, name_col, layer, ts_ns, dur_ns)
    of_op = [_of_op(v) for v in name_col.values]
    launching = np.flatnonzero(np.asarray([bool(c) for c in of_op], dtype=bool)[name_col.codes] & on_host)
    out.op_collectives = {p: of_op[name_col.codes[p]] for p in launching.tolist()}
    return out


STEP_PREFIX = kinds.STEP_PREFIX


def _step_marks(
    names: list[str], name_col: _Encoded, layer: np.ndarray, ts_ns: np.ndarray, dur_ns: np.ndarray
) -> list[tuple[int, int, int]]:
    marks = name_col.mask(lambda n: n.startswith(STEP_PREFIX) and n[len(STEP_PREFIX) :].isdigit())
    marks &= layer == kinds.LAYER_CODES[kinds.FRAMEWORK]
    return [
        (int(ts_ns[p]), int(ts_ns[p] + dur_ns[p]), int(names[p][len(STEP_PREFIX) :]))
        for p in np.flatnonzero(marks).tolist()
    ]


def _device_stream(
    args: list[Any], on_device: np.ndarray, sync: np.ndarray, pids: np.ndarray, tids: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Device and stream of each row, as ``model.execution.placement`` gives them: device rows from
    args, else Kineto's pid/tid convention; synchronizations from args alone; -1 elsewhere."""
    device = np.full(len(args), NO_ID, dtype=np.int64)
    stream = np.full(len(args), NO_ID, dtype=np.int64)
    rows = np.flatnonzero(on_device | sync)
    if len(rows):
        on = [args[p] for p in rows.tolist()]
        device[rows] = _ids([NO_ID if (x := a.device) is None else x for a in on])
        stream[rows] = _ids([NO_ID if (x := a.stream) is None else x for a in on])
        fill = rows[on_device[rows]]
        device[fill] = np.where(device[fill] == NO_ID, pids[fill], device[fill])
        stream[fill] = np.where(stream[fill] == NO_ID, tids[fill], stream[fill])
    return device.astype(np.int32), stream


def _memory_devices(args: list[Any], memory: np.ndarray) -> np.ndarray:
    """The device of allocator instants (``model.execution.memory_device``): -1 for host memory."""
    rows = np.flatnonzero(memory).tolist()
    types, ids = [args[p].device_type for p in rows], [args[p].device_id for p in rows]
    if _plain_ints(types) and _plain_ints(ids):  # as Kineto writes them: read as columns
        pairs = list(zip(types, ids, strict=True))
        per_device = {pair: memory_device({"Device Type": pair[0], "Device Id": pair[1]}) for pair in set(pairs)}
        return np.asarray([per_device[pair] for pair in pairs], dtype=np.int32)
    return np.asarray(
        [memory_device({"Device Type": t, "Device Id": i}) for t, i in zip(types, ids, strict=True)], dtype=np.int32
    )


def _plain_ints(values: list[Any]) -> bool:
    """Whether every value is an ``int`` (not a bool, float or text: those are read one by one)."""
    return set(map(type, values)) <= {int}


def _clamp_negative(dur_ns: np.ndarray, index: list[int], ctx: SessionContext, problems: ProblemLog) -> None:
    negative = np.flatnonzero(dur_ns < 0)
    for pos in negative.tolist():
        problems.add(ctx.file, f"event {index[pos]}", NEGATIVE_DURATION, "negative duration; kept with duration 0")
    dur_ns[negative] = 0


def _layer_kind_codes(cats: _Encoded, codes: KindCodes) -> tuple[np.ndarray, np.ndarray]:
    """Layer and kind codes of each row from its category (one lookup per distinct category)."""
    per_value = np.asarray([codes.code(v) for v in cats.values], dtype=np.int8).reshape(-1, 2)
    both = per_value[cats.codes] if len(cats.codes) else np.zeros((0, 2), dtype=np.int8)
    return both[:, 0].copy(), both[:, 1].copy()


def _name_rules(layer: np.ndarray, kind: np.ndarray, memory: np.ndarray, host_collective: np.ndarray) -> None:
    """The model's name rules for host rows: allocator instants and host collectives are runtime rows."""
    layer[memory | host_collective] = kinds.LAYER_CODES[kinds.RUNTIME]
    kind[memory] = kinds.KIND_CODES[kinds.ALLOCATION]
    kind[host_collective] = kinds.KIND_CODES[kinds.COLLECTIVE]


def _call_stacks(args: list[Any], rows: np.ndarray) -> dict[int, str]:
    """Legacy ``Call stack`` args (``file(line): func;...``) of ``rows``, by row position."""
    present = [pos for pos, a in enumerate(args) if a.call_stack is not None]  # few rows, when any
    return {pos: stack for pos in present if rows[pos] and type(stack := args[pos].call_stack) is str and stack}


def _memory_counters(memory_rows: list[int], args: list[Any], ts_ns: np.ndarray) -> CounterColumns | None:
    """Allocator totals carried by ``[memory]`` instants, as device (or host allocator) memory counters."""
    totals = [p for p in memory_rows if args[p].total_allocated is not None]
    if not totals:
        return None
    fast = _plain_memory_counters([args[p] for p in totals], ts_ns[totals])
    if fast is not None:
        return fast
    series: dict[tuple[int, int], tuple[str, str, int]] = {}  # (device id, type) -> labels and device
    rows = []
    for pos, ts in zip(totals, ts_ns[totals].tolist(), strict=True):
        a = args[pos]
        where = (to_int(a.device_id, NO_ID), to_int(a.device_type, 0))
        allocated, reserved, device = series.get(where) or series.setdefault(where, _memory_series(*where))
        for value, label in ((a.total_allocated, allocated), (a.total_reserved, reserved)):
            if type(value) in (int, float):
                rows.append((label, ts, float(value), "bytes", device))
    return CounterColumns.of_rows(rows)


def _plain_memory_counters(held: list[Any], times: np.ndarray) -> CounterColumns | None:
    """``_memory_counters`` of events whose device fields are ints and totals numbers (as Kineto
    writes them), built as columns (each series' labels made once); None when some are not (read
    one by one). Each event gives its allocated total, then its reserved total."""
    ids, types = [a.device_id for a in held], [a.device_type for a in held]
    allocated, reserved = [a.total_allocated for a in held], [a.total_reserved for a in held]
    numbers = set(map(type, allocated)) | set(map(type, reserved)) <= {int, float}
    if not (numbers and _plain_ints(ids) and _plain_ints(types)):
        return None
    pairs = list(zip(ids, types, strict=True))
    series = {pair: _memory_series(*pair) for pair in set(pairs)}
    labels = list(map(series.__getitem__, pairs))
    names: list[Any] = [None] * (2 * len(held))
    names[0::2] = [s[0] for s in labels]
    names[1::2] = [s[1] for s in labels]
    value = np.empty(2 * len(held), np.float64)
    value[0::2], value[1::2] = np.asarray(allocated, np.float64), np.asarray(reserved, np.float64)
    device = np.repeat(np.asarray([s[2] for s in labels], np.int64), 2)
    return CounterColumns(names, np.repeat(times, 2), value, ["bytes"] * len(names), device)


def _memory_series(device: int, device_type: int) -> tuple[str, str, int]:
    """(allocated label, reserved label, device) of a device's allocator totals (type 0: the host's)."""
    prefix = "host allocator" if device_type == 0 else f"device {device} memory"
    return f"{prefix} allocated", f"{prefix} reserved", NO_ID if device_type == 0 else device


def scalar_ns(ts_us: Any, base_ns: int) -> int:
    """One timestamp as ``epoch_ns`` gives it for a column (``model.values.us_to_ns``)."""
    return us_to_ns(ts_us if type(ts_us) in (int, float) else float(ts_us), base_ns)


def _memory_events(
    memory_rows: list[int], args: list[Any], ts_ns: np.ndarray, ids: np.ndarray
) -> tuple[list[Any], list[Any], list[int], list[int]]:
    """(addresses, bytes, ts, ids) of allocations recorded as ``[memory]`` instants (frees have
    bytes < 0); address and bytes as the trace spells them (``MemoryEvents`` reads them when needed)."""
    found = [p for p in memory_rows if args[p].addr is not None]
    held = [args[p] for p in found]
    return [a.addr for a in held], [a.bytes for a in held], ts_ns[found].tolist(), ids[found].tolist()


def _counter_rows(counters: list[IndexedRecord], ctx: SessionContext, problems: ProblemLog) -> list[CounterRow]:
    """The series of counter (``C``) events; their args are decoded whole, in one call."""
    rows = []
    all_args = trace_records.codec().args([r for _, r in counters])
    for (index, record), args in zip(counters, all_args, strict=True):
        if bytes(record.args)[:1] != b"{":
            problems.add(ctx.file, f"event {index}", BAD_FIELD, "counter event without an args object; skipped")
            continue
        ts = scalar_ns(or_default(record.ts, 0), ctx.base_ns)
        name = "counter" if record.name is None else str(record.name)
        pid = to_int(record.pid)
        device = NO_ID if pid == ctx.host_pid else pid
        for series, value in args.items():
            if isinstance(value, (int, float)):
                label = name if len(args) == 1 else f"{name} {series}"
                rows.append((label, ts, float(value), "", device))
    return rows


def _thread_names(records: list[TraceRecord]) -> dict[tuple[int, int], str]:
    """(pid, tid) -> name of ``thread_name`` metadata events."""
    found = {}
    for record, args in zip(records, trace_records.codec().args(records), strict=True):
        name = args.get("name") if isinstance(args, dict) else None
        if isinstance(name, str) and name:
            found[(to_int(record.pid), to_int(record.tid))] = name
    return found


def _flow_point(record: TraceRecord, ctx: SessionContext) -> FlowPoint:
    ts = scalar_ns(or_default(record.ts, 0), ctx.base_ns)
    return (
        to_int(record.id, NO_ID),
        "" if record.cat is None else str(record.cat),
        "" if record.name is None else str(record.name),
        str(record.ph),
        ts,
        to_int(record.pid),
        to_int(record.tid),
        record.bp == "e",
    )

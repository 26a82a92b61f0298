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
from dataclasses import dataclass
from itertools import repeat
from typing import Any

import numpy as np
import pyarrow as pa

from kinetoscope.format.kineto import trace_records
from kinetoscope.format.kineto.trace_records import TraceRecord
from kinetoscope.format.problems import ProblemLog
from kinetoscope.ingest.rows.batch import (
    ARG_KEYS,
    BAD_FIELD,
    COMPLETE_PHASES,
    DEVICE_TRACK_BIT,
    FLOW_PHASES,
    INSTANT_PHASES,
    NEGATIVE_DURATION,
    ROW_FIELDS,
    THREAD_NAME,
    UNKNOWN_CATEGORY,
    Batch,
    IndexedRecord,
    SessionContext,
)
from kinetoscope.ingest.rows.first_codes import first_codes
from kinetoscope.ingest.rows.memory_rows import memory_counters, memory_devices, memory_events
from kinetoscope.ingest.rows.side_rows import counter_rows, flow_point, thread_names
from kinetoscope.model import collectives as model_collectives
from kinetoscope.model import kinds
from kinetoscope.model.scalars import NO_ID, TS_US_LIMIT, to_int, wrap_int64


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
    candidates = on_device | names.mask(lambda n: n.startswith(model_collectives.METADATA_OPS))
    named = {pos: value for pos in np.flatnonzero(candidates).tolist() if type(value := args[pos].collective) is str}
    spelled = [_spelled(v) for v in names.values]
    # rows whose name spells a collective ("" for the others, as for rows with none: code 0 either way)
    rows = np.flatnonzero((on_device | names.mask(kinds.is_host_collective)) & names.mask(lambda n: bool(_spelled(n))))
    found = dict(zip(rows.tolist(), map(spelled.__getitem__, names.codes[rows].tolist()), strict=True))
    found.update({pos: value for pos, value in named.items() if value})  # the metadata, where it names one
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


def _profiler_rows(categories: _Encoded, pids: list[Any]) -> np.ndarray | None:
    """Which slices and instants are the profiler's own markers (category "Trace", or a pid that
    is a name): None when none is, as a look at the distinct categories and a C-level pass over
    the pids find in the common case."""
    if "Trace" not in categories.values and set(map(type, pids)) <= {int}:
        return None
    named = np.asarray([_profiler_marker(p) for p in pids], bool)
    markers: np.ndarray = categories.mask(lambda c: c == "Trace") | named
    return markers


def _records_of(batch: Sequence[IndexedRecord], positions: np.ndarray) -> list[TraceRecord]:
    return [batch[p][1] for p in positions.tolist()]


def _side_records(
    batch: Sequence[IndexedRecord], phases: np.ndarray, out: Batch, ctx: SessionContext, problems: ProblemLog
) -> None:
    """Counters, and flow endpoints (flows whose ids are correlation ids are only counted)."""
    names = [r for r in _records_of(batch, np.flatnonzero(phases == _METADATA)) if r.name == THREAD_NAME]
    if names:
        out.thread_names.update(thread_names(names))
    flow_rows = np.flatnonzero((phases == _FLOW_START) | (phases == _FLOW_OTHER))
    flows = _records_of(batch, flow_rows)
    by_correlation = _launch_flows([r.cat for r in flows])
    out.correlation_flows = int(np.count_nonzero(by_correlation & (phases[flow_rows] == _FLOW_START)))
    out.flow_points = [flow_point(flows[p], ctx) for p in np.flatnonzero(~by_correlation).tolist()]
    counters = np.flatnonzero(phases == _COUNTER)
    if len(counters):
        out.counters.extend(counter_rows([batch[p] for p in counters.tolist()], ctx, problems))


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
        """Strings coded in order of first appearance (``first_codes``)."""
        codes, values = first_codes(texts, len(texts))
        return cls.of_codes(codes, values)

    @classmethod
    def of_codes(cls, codes: np.ndarray, values: list[str]) -> _Encoded:
        array = pa.DictionaryArray.from_arrays(pa.array(codes), pa.array(values, pa.string()))
        return cls(array, codes, values)

    @classmethod
    def of_texts(cls, values: list[Any]) -> tuple[_Encoded, list[str]]:
        """Names or categories as ``_texts`` gives them, and their column: coded as read, the type
        of each distinct value checked (not of each row); a batch with a value that is not a
        string (absent, a number) is converted first, then coded."""
        try:
            codes, distinct = first_codes(values, len(values))
            if all(type(v) is str for v in distinct):
                return cls.of_codes(codes, distinct), values
        except TypeError:  # an unhashable value (a list, an object): converted as the others
            pass
        texts = _texts(values)
        return cls.of(texts), texts

    @classmethod
    def sparse(cls, length: int, found: dict[int, str]) -> _Encoded:
        """``length`` rows of "" but those in ``found`` (row position -> value), coded without a
        pass over every row: "" is code 0, the other values follow in row order."""
        rows = sorted(found)
        coded, values = first_codes(["", *map(found.__getitem__, rows)], len(rows) + 1)  # "": code 0
        codes = np.zeros(length, np.int32)
        codes[rows] = coded[1:]
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
    cat_col, pid_values = _Encoded.of_texts([r.cat for r in records])[0], [r.pid for r in records]
    markers = _profiler_rows(cat_col, pid_values)
    if markers is not None and markers.any():  # rare (a few per trace): the batch is read again without them
        rest = [k for k, marker in zip(kept, markers.tolist(), strict=True) if not marker]
        return _rows(rest, complete - int(np.count_nonzero(markers[:complete])), ctx, codes, problems)
    name_col, names = _Encoded.of_texts([r.name for r in records])
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
    device[memory] = memory_devices(args, memory)
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
    out.memory_counters = memory_counters(memory_rows, args, ts_ns)
    out.memory_events = memory_events(memory_rows, args, ts_ns, ids)
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
    stacks = [a.call_stack for a in args]
    if stacks.count(None) == len(stacks):  # the usual batch: none (a count of the same None object, in C)
        return {}
    present = [pos for pos, stack in enumerate(stacks) if stack is not None]  # few rows, when any
    return {pos: stack for pos in present if rows[pos] and type(stack := stacks[pos]) is str and stack}

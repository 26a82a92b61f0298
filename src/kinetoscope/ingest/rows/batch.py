"""One batch of Kineto events as columns: what ``columnize`` makes and the rest of ingest reads
(the rows of the ``events`` table, flow endpoints, counter rows, thread names, allocator events),
and the facts of the session it needs (``SessionContext``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from kinetoscope.format.kineto.trace_records import ArgKeys, TraceRecord

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

# A column of values as the trace spells them, or in an array where they fit one.
Values = Sequence[Any] | np.ndarray


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
    # Allocator events: (addresses, bytes as the trace spells them or in 64-bit arrays, ts ns, ids).
    memory_events: tuple[Values, Values, Values, Values] = field(default_factory=lambda: ([], [], [], []))

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

"""Side records of a batch: counter (``C``) events as counter rows, ``thread_name`` metadata, and
flow (``s``/``t``/``f``) events as flow endpoints."""

from __future__ import annotations

from typing import Any

from kinetoscope.format.kineto import trace_records
from kinetoscope.format.kineto.trace_records import TraceRecord, or_default
from kinetoscope.format.problems import ProblemLog
from kinetoscope.ingest.rows.batch import BAD_FIELD, CounterRow, FlowPoint, IndexedRecord, SessionContext
from kinetoscope.model.scalars import NO_ID, to_int, us_to_ns


def scalar_ns(ts_us: Any, base_ns: int) -> int:
    """One timestamp as ``epoch_ns`` gives it for a column (``model.values.us_to_ns``)."""
    return us_to_ns(ts_us if type(ts_us) in (int, float) else float(ts_us), base_ns)


def counter_rows(counters: list[IndexedRecord], ctx: SessionContext, problems: ProblemLog) -> list[CounterRow]:
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


def thread_names(records: list[TraceRecord]) -> dict[tuple[int, int], str]:
    """(pid, tid) -> name of ``thread_name`` metadata events."""
    found = {}
    for record, args in zip(records, trace_records.codec().args(records), strict=True):
        name = args.get("name") if isinstance(args, dict) else None
        if isinstance(name, str) and name:
            found[(to_int(record.pid), to_int(record.tid))] = name
    return found


def flow_point(record: TraceRecord, ctx: SessionContext) -> FlowPoint:
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

"""A merged trace in the Chrome trace-event JSON format (opens in ui.perfetto.dev and
chrome://tracing): slices as ``X`` events, instants as ``i``, counters as ``C``, flows as
``s``/``f`` pairs bound to their slices. Times are µs from ``baseTimeNanoseconds`` (the first
event of any rank), so they keep their ns digits."""

from __future__ import annotations

from collections.abc import Iterable
from typing import IO, Any

import orjson
import pyarrow as pa

from kinetoscope.render.export_tracks import ExportCounts, TrackNames


def _us(ts_ns: int, base_ns: int) -> float:
    return round((ts_ns - base_ns) / 1000.0, 3)


def _write(out: IO[bytes], first: list[bool], event: dict[str, Any]) -> None:
    out.write(b"\n" if first[0] else b",\n")
    first[0] = False
    out.write(orjson.dumps(event))


def _args(text: str | None) -> Any:
    try:
        return orjson.loads(text) if text else {}
    except orjson.JSONDecodeError:
        return {"args": text}


def write_chrome(
    out: IO[bytes],
    base_ns: int,
    names: TrackNames,
    *,
    slices: Iterable[pa.RecordBatch],
    counters: Iterable[pa.RecordBatch],
    flows: Iterable[pa.RecordBatch],
) -> ExportCounts:
    """Write the whole trace; returns what it holds."""
    out.write(b'{"displayTimeUnit": "ns", "baseTimeNanoseconds": ' + str(base_ns).encode() + b', "traceEvents": [')
    first, count, samples, arrows = [True], 0, 0, 0
    for event in names.metadata_events():
        _write(out, first, event)
    for batch in slices:
        for row in batch.to_pylist():
            event = {
                "ph": "X" if row["dur_ns"] else "i",
                "cat": row["category"],
                "name": row["name"],
                "pid": row["out_pid"],
                "tid": row["out_tid"],
                "ts": _us(row["ts_ns"], base_ns),
                "args": _args(row["args"]),
            }
            if row["dur_ns"]:
                event["dur"] = row["dur_ns"] / 1000.0
            else:
                event["s"] = "t"
            _write(out, first, event)
            count += 1
    for batch in counters:
        for row in batch.to_pylist():
            _write(
                out,
                first,
                {
                    "ph": "C",
                    "name": row["name"],
                    "pid": row["out_pid"],
                    "tid": 0,
                    "ts": _us(row["ts_ns"], base_ns),
                    "args": {row["unit"] or "value": row["value"]},
                },
            )
            samples += 1
    for batch in flows:
        for row in batch.to_pylist():
            common = {"cat": row["kind"], "name": row["kind"], "id": row["fid"]}
            _write(
                out,
                first,
                {
                    **common,
                    "ph": "s",
                    "pid": row["src_pid"],
                    "tid": row["src_tid"],
                    "ts": _us(row["src_ts_ns"], base_ns),
                },
            )
            _write(
                out,
                first,
                {
                    **common,
                    "ph": "f",
                    "bp": "e",
                    "pid": row["dst_pid"],
                    "tid": row["dst_tid"],
                    "ts": _us(row["dst_ts_ns"], base_ns),
                },
            )
            arrows += 1
    out.write(b"\n]}\n")
    return ExportCounts(count, samples, arrows)

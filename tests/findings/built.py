"""Tiny dataset tables built by hand, for the GPU-only rules on a machine without a GPU."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

COLUMNS = {
    "run": pa.string(),
    "rank": pa.int32(),
    "id": pa.int64(),
    "kind": pa.string(),
    "name": pa.string(),
    "ts_ns": pa.int64(),
    "dur_ns": pa.int64(),
    "depth": pa.int32(),
    "op_id": pa.int64(),
    "launch_id": pa.int64(),
    "correlation": pa.int64(),
    "self_ns": pa.int64(),
    "step": pa.int32(),
    "args": pa.string(),
    "layer": pa.string(),
    "tid": pa.int64(),
    "device": pa.int32(),
    "collective": pa.string(),
}
DEVICE_KINDS = ("kernel", "memcpy", "memset")
RUNTIME_KINDS = ("runtime", "driver", "sync", "allocation", "collective")
DEFAULTS: dict[str, Any] = {"run": "r", "rank": 0, "depth": 0, "op_id": -1, "launch_id": -1, "correlation": -1}


class Trace:
    """Events appended one by one; ``tables()`` gives what ``run_rules`` reads."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.dropped_events = 0
        self.warnings: list[dict[str, Any]] = []
        self.counters: list[dict[str, Any]] = []
        self.device_memory = "{}"  # sessions.device_memory: the devices' total bytes, as JSON
        self.device_name = ""  # the deviceProperties name of the rank's GPU

    def add(self, kind: str, name: str, ts_ns: int, dur_ns: int, step: int = 0, **extra: Any) -> int:
        event_id = len(self.rows) + 1
        on_device = kind in DEVICE_KINDS
        layer = "device" if on_device else "runtime" if kind in RUNTIME_KINDS else "framework"
        row = {**DEFAULTS, "id": event_id, "kind": kind, "name": name, "ts_ns": ts_ns, "dur_ns": dur_ns}
        place = {"layer": layer, "tid": -1 if on_device else 1, "device": 0 if on_device else -1, "collective": ""}
        self.rows.append({**row, **place, "self_ns": dur_ns, "step": step, "args": "{}", **extra})
        return event_id

    def launch(
        self, kernel: str, host_ns: int, device_ns: int, dur_ns: int, call: str = "cudaLaunchKernel", *, op_id: int = -1
    ) -> int:
        """A launch call at ``host_ns`` (2 µs) and the device work it starts at ``device_ns``, both
        taking the op ``op_id`` (the op whose call launched it, as ingest sets it)."""
        correlation = len(self.rows) + 1000
        call_id = self.add("runtime", call, host_ns, 2_000, correlation=correlation, op_id=op_id)
        kind = "memcpy" if kernel.startswith("Memcpy") else "kernel"
        return self.add(kind, kernel, device_ns, dur_ns, correlation=correlation, launch_id=call_id, op_id=op_id)

    def tables(self) -> dict[str, pa.Table]:
        events = pa.Table.from_pylist(self.rows, schema=pa.schema(list(COLUMNS.items())))
        sessions = pa.table(
            {
                "run": ["r"],
                "rank": pa.array([0], pa.int32()),
                "dropped_events": [self.dropped_events],
                "device_memory": [self.device_memory],
                "device_name": [self.device_name],
            }
        )
        warnings = pa.Table.from_pylist(
            self.warnings,
            schema=pa.schema(
                [("run", pa.string()), ("rank", pa.int32()), ("kind", pa.string()), ("count", pa.int64())]
            ),
        )
        counters = pa.Table.from_pylist(
            [{"run": "r", "rank": 0, "unit": "bytes", **c} for c in self.counters],
            schema=pa.schema(
                [
                    ("run", pa.string()),
                    ("rank", pa.int32()),
                    ("name", pa.string()),
                    ("ts_ns", pa.int64()),
                    ("value", pa.float64()),
                    ("unit", pa.string()),
                    ("device", pa.int32()),
                ]
            ),
        )
        return {"events": events, "sessions": sessions, "warnings": warnings, "counters": counters}

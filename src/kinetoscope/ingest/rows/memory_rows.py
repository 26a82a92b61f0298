"""The rows allocator instants (``[memory]`` events) give beside their ``events`` row: the device
of each, the allocator totals they carry as memory counters, and the allocations they record."""

from __future__ import annotations

from typing import Any

import numpy as np

from kinetoscope.ingest.rows.batch import CounterColumns, Values
from kinetoscope.ingest.rows.first_codes import first_codes
from kinetoscope.model.execution import memory_device
from kinetoscope.model.scalars import NO_ID, to_int


def memory_devices(args: list[Any], memory: np.ndarray) -> np.ndarray:
    """The device of allocator instants (``model.execution.memory_device``): -1 for host memory."""
    rows = np.flatnonzero(memory).tolist()
    types, ids = [args[p].device_type for p in rows], [args[p].device_id for p in rows]
    if _plain_ints(types) and _plain_ints(ids):  # as Kineto writes them: read as columns
        codes, pairs = first_codes(zip(types, ids, strict=True), len(rows))  # each distinct (type, id) once
        devices = [memory_device({"Device Type": kind, "Device Id": device}) for kind, device in pairs]
        found: np.ndarray = np.asarray(devices, dtype=np.int32)[codes]
        return found
    return np.asarray(
        [memory_device({"Device Type": t, "Device Id": i}) for t, i in zip(types, ids, strict=True)], dtype=np.int32
    )


def _plain_ints(values: list[Any]) -> bool:
    """Whether every value is an ``int`` (not a bool, float or text: those are read one by one)."""
    return set(map(type, values)) <= {int}


def memory_counters(memory_rows: list[int], args: list[Any], ts_ns: np.ndarray) -> CounterColumns | None:
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
    """``memory_counters`` of events whose device fields are ints and totals numbers (as Kineto
    writes them), built as columns (each series' labels made once); None when some are not (read
    one by one). Each event gives its allocated total, then its reserved total."""
    ids, types = [a.device_id for a in held], [a.device_type for a in held]
    allocated, reserved = [a.total_allocated for a in held], [a.total_reserved for a in held]
    numbers = set(map(type, allocated)) | set(map(type, reserved)) <= {int, float}
    if not (numbers and _plain_ints(ids) and _plain_ints(types)):
        return None
    codes, pairs = first_codes(zip(ids, types, strict=True), len(held))  # each distinct (id, type) once
    series = [_memory_series(*pair) for pair in pairs]
    labels = np.asarray([label for s in series for label in s[:2]], dtype=object)  # allocated, reserved
    names = labels[np.stack([2 * codes, 2 * codes + 1], axis=1).reshape(-1)].tolist()
    value = np.empty(2 * len(held), np.float64)
    value[0::2], value[1::2] = np.asarray(allocated, np.float64), np.asarray(reserved, np.float64)
    device = np.repeat(np.asarray([s[2] for s in series], np.int64)[codes], 2)
    return CounterColumns(names, np.repeat(times, 2), value, ["bytes"] * len(names), device)


def _memory_series(device: int, device_type: int) -> tuple[str, str, int]:
    """(allocated label, reserved label, device) of a device's allocator totals (type 0: the host's)."""
    prefix = "host allocator" if device_type == 0 else f"device {device} memory"
    return f"{prefix} allocated", f"{prefix} reserved", NO_ID if device_type == 0 else device


def memory_events(
    memory_rows: list[int], args: list[Any], ts_ns: np.ndarray, ids: np.ndarray
) -> tuple[Values, Values, Values, Values]:
    """(addresses, bytes, ts, ids) of allocations recorded as ``[memory]`` instants (frees have
    bytes < 0); address and bytes as the trace spells them (``MemoryEvents`` reads them when needed),
    in 64-bit arrays where all are integers that fit (as Kineto writes them). They are kept for the
    whole session: as Python objects, made batch by batch among each batch's short-lived records,
    they would pin the interpreter's memory arenas that hold them to the session's end (the one
    screen of a raw 54 MB trace, 29 k allocations: about 4 MiB of resident memory)."""
    found = [p for p in memory_rows if args[p].addr is not None]
    held = [args[p] for p in found]
    return _int64_or_as_is([a.addr for a in held]), _int64_or_as_is([a.bytes for a in held]), ts_ns[found], ids[found]


def _int64_or_as_is(values: list[Any]) -> Values:
    """``values`` as a 64-bit array where every value is an ``int`` that fits, else as they are."""
    if not _plain_ints(values):
        return values
    try:
        return np.asarray(values, dtype=np.int64)
    except OverflowError:
        return values

"""One streaming pass over a ``trace.json`` gathering what ``verify`` checks: how many events
were read or lost, when device work ended, how long compilation ran, which devices worked,
which compiled kernels ran, and each collective with its end (to compare clocks across ranks).
The same pass hashes the file, so the manifest check does not read it again."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kinetoscope.format.kineto import trace_records
from kinetoscope.format.kineto.kineto_json import iter_trace_records
from kinetoscope.format.kineto.trace_records import ArgKeys, TraceRecord, or_default
from kinetoscope.format.problems import ProblemLog
from kinetoscope.model import collectives, compilation, kinds, launch_calls, matching, profiling_window
from kinetoscope.model import execution as ke
from kinetoscope.model.device_processes import Placer
from kinetoscope.model.scalars import to_int

# The args keys the scan reads (decoded for a whole batch at once, every other key skipped).
SCAN_KEYS = ArgKeys(
    collective="Collective name",
    group="Process Group Name",
    group_id="Process Group ID",
    seq="Seq",
    in_nelems="In msg nelems",
    out_nelems="Out msg nelems",
    dtype="dtype",
    kernel_hash="kernel_hash",
    device="device",
    correlation="correlation",
)


@dataclass
class TraceScan:
    """What one pass over a trace found."""

    events: int = 0
    first_ns: int | None = None
    last_host_end_ns: int | None = None
    device_end_ns: int | None = None
    device_events: int = 0
    devices: set[int] = field(default_factory=set)
    compile_intervals: list[tuple[int, int]] = field(default_factory=list)
    kernel_hashes: set[str] = field(default_factory=set)
    # The rank's collective kernels and host collectives (``model.matching`` pairs them across ranks;
    # ``collectives`` picks those that stand for the rank's collectives).
    collective_kernels: list[matching.Arrival] = field(default_factory=list)
    host_collectives: list[matching.Arrival] = field(default_factory=list)
    # Correlation ids of runtime calls, and (id, duration) of device work that has one.
    call_correlations: set[int] = field(default_factory=set)
    # Uncategorised slices per pid, and the pids of processes named as unplaced device processes
    # (``kinds.UNPLACED_DEVICE_PROCESSES``): their product is device work read as framework markers.
    uncategorised_by_pid: dict[Any, int] = field(default_factory=dict)
    unplaced_device_pids: dict[Any, str] = field(default_factory=dict)
    kernel_launch_calls: int = 0  # runtime calls that launch a kernel or replay a graph (model.launch_calls)
    work_correlations: list[tuple[int, int]] = field(default_factory=list)
    problems: ProblemLog = field(default_factory=ProblemLog)
    sha256: str = ""  # of the file as it was read
    user_patterns: tuple[str, ...] = ()  # the user's communication patterns: their kernels are collectives

    def collective_rows(self, rank: int) -> list[matching.Arrival]:
        """The rank's rows of its collectives, as ``model.matching`` takes them."""
        return [replace(a, rank=rank) for a in matching.of_rank(self.collective_kernels, self.host_collectives)]


def scan_trace(path: Path, base_ns: int, batch_size: int = 50_000, user_patterns: tuple[str, ...] = ()) -> TraceScan:
    scan = TraceScan(user_patterns=user_patterns)
    codec = trace_records.codec()
    hasher = hashlib.sha256()
    placer = Placer()
    for batch in iter_trace_records(path, scan.problems, batch_size, hasher=hasher):
        placer.place(batch)
        slices = [r for _, r in batch if r.ph == "X"]
        _take_processes(scan, [r for _, r in batch if r.ph == "M" and r.name == kinds.PROCESS_NAME])
        for record, args in zip(slices, codec.known_args([bytes(r.args) for r in slices], SCAN_KEYS), strict=True):
            _take(scan, record, args, base_ns)
        scan.events += len(batch)
    scan.sha256 = hasher.hexdigest()
    return scan


def _take(scan: TraceScan, record: TraceRecord, args: Any, base_ns: int) -> None:
    category, name = str(or_default(record.cat, "")), str(or_default(record.name, ""))
    found = kinds.rule(category, name, "X")
    if found is None and not category:
        pid = _hashable(record.pid)
        scan.uncategorised_by_pid[pid] = scan.uncategorised_by_pid.get(pid, 0) + 1
    try:  # the times the conversion gives the event, and the events it skips
        start = ke.to_ns(record.ts, base_ns)
        end = start + ke.event_duration_ns(record.dur)
    except ke.Skip:
        return
    scan.first_ns = start if scan.first_ns is None else min(scan.first_ns, start)
    layer, kind = found or kinds.UNKNOWN
    correlation = to_int(args.correlation)
    if kind in kinds.DEVICE_WORK_KINDS:
        _take_device(scan, args, record, end)
        if correlation >= 0:
            scan.work_correlations.append((correlation, end - start))
        user_kernel = scan.user_patterns and kind == kinds.KERNEL
        user = collectives.of_user_kernel(name, scan.user_patterns) if user_kernel else ""
        _take_collective(scan.collective_kernels, args, name, end, user)
        return
    if category == "Trace" or layer == kinds.DEVICE:  # the profiler's span, device annotations: not host work
        return
    if kinds.is_host_collective(name):  # gloo's ops: the CPU ranks' collectives
        _take_collective(scan.host_collectives, args, name, end)
    if layer == kinds.RUNTIME and correlation >= 0:
        scan.call_correlations.add(correlation)
    if layer == kinds.RUNTIME and launch_calls.is_kernel_launch(name):
        scan.kernel_launch_calls += 1
    scan.last_host_end_ns = end if scan.last_host_end_ns is None else max(scan.last_host_end_ns, end)
    if compilation.is_compilation(name):
        scan.compile_intervals.append((start, end))
    kernel_hash = args.kernel_hash
    if isinstance(kernel_hash, str) and kernel_hash:
        scan.kernel_hashes.add(kernel_hash)


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (int, str, float)) else str(value)


def _take_processes(scan: TraceScan, records: list[TraceRecord]) -> None:
    """Note the pids of processes named as an unplaced device (``kinds.UNPLACED_DEVICE_PROCESSES``)."""
    for record in records:
        try:
            named = json.loads(bytes(record.args) or b"{}").get("name")
        except (ValueError, AttributeError, TypeError):
            continue
        if named in kinds.UNPLACED_DEVICE_PROCESSES:
            scan.unplaced_device_pids[_hashable(record.pid)] = str(named)


def unplaced_device_work(scan: TraceScan) -> tuple[int, list[str]]:
    """(slices of unplaced device processes that no category places, those processes' names)."""
    count = sum(scan.uncategorised_by_pid.get(pid, 0) for pid in scan.unplaced_device_pids)
    return count, sorted(set(scan.unplaced_device_pids.values()))


def _take_collective(found: list[matching.Arrival], args: Any, name: str, end: int, user: str = "") -> None:
    """A collective row: its collective from its metadata, else from its name, else the one the
    user's patterns give it (``user``); its group, ``Seq`` and size where recorded."""
    given = args.collective
    collective = collectives.canonical(given if isinstance(given, str) else collectives.spelled(name) or user)
    if not collective:
        return
    group = next((str(g) for g in (args.group, args.group_id) if g is not None and g != ""), "")
    size = collectives.size_bytes(args.in_nelems, args.out_nelems, args.dtype)
    found.append(matching.Arrival(-1, group, collective, to_int(args.seq), size, end))


def _take_device(scan: TraceScan, args: Any, record: TraceRecord, end: int) -> None:
    scan.device_events += 1
    scan.device_end_ns = end if scan.device_end_ns is None else max(scan.device_end_ns, end)
    device = to_int(or_default(args.device, record.pid))
    if device >= 0:
        scan.devices.add(device)


def launched_before(scan: TraceScan) -> tuple[int, int]:
    """(executions, their device time) of device work launched before the window (``model.profiling_window``)."""
    return profiling_window.launched_before(scan.work_correlations, scan.call_correlations)


def covered_ns(intervals: list[tuple[int, int]]) -> int:
    """Time covered by possibly nested or overlapping intervals."""
    total, reach = 0, None
    for start, end in sorted(intervals):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total

"""Memory history: every allocation and free with its Python stack, for ``export_snapshot``.

On CUDA this is PyTorch's caching-allocator history (``torch.cuda.memory``). On CPU, where
PyTorch keeps none, kinetoscope's allocator hook (``alloc_hook``) records every allocation
and free of tensor storage. Either way ``take_snapshot()`` returns PyTorch's snapshot
structure (see ``kinetoscope.format.session_files.snapshot``), whose entry times (``time_us``) are
CLOCK_REALTIME, the clock of ``trace.json``.
"""

from __future__ import annotations

import dataclasses
import threading
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch

from kinetoscope._errors import ConfigError, SessionError
from kinetoscope.capture import environment as env
from kinetoscope.format.perfetto_packets import perfetto as pf

DEFAULT_MAX_ENTRIES = 100_000
STACKS = ("python", "all", "none")
CPU = "cpu"
SOURCE_BY_DEVICE = {CPU: "cpu-allocator-hook", "cuda": "cuda-caching-allocator"}
_LARGE_SEGMENT_BYTES = 1 << 20
_FREE_ACTIONS = ("free_requested", "free_completed")


@dataclass(frozen=True)
class Recording:
    """What is being recorded, since when."""

    device_kind: str
    max_entries: int
    stacks: str
    start_clocks_ns: dict[int, int] = field(default_factory=dict)

    @property
    def source(self) -> str:
        return SOURCE_BY_DEVICE.get(self.device_kind, f"{self.device_kind}-allocator")


@dataclass(frozen=True)
class SnapshotCounts:
    """Allocator events (an allocation or a free) kept, and recorded since recording started."""

    entries: int
    entries_total: int


_lock = threading.Lock()
_recording: Recording | None = None


def record_memory_history(
    enabled: bool = True,
    *,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    stacks: str | None = "python",
    device: str | None = None,
) -> None:
    """Start (``enabled=True``) or stop (``enabled=False``) recording allocation history.

    ``max_entries`` bounds the history, dropping the oldest entries; ``stacks`` is
    ``"python"`` (Python frames of each allocation), ``"all"`` (Python and C++) or
    ``None``; ``device`` is ``"cpu"`` or the accelerator (``"cuda"``), by default the
    accelerator when there is one, else the CPU.
    """
    global _recording
    with _lock:
        if not enabled:
            if _recording is not None:
                _stop(_recording)
            _recording = None
            return
        recording = _new_recording(max_entries, stacks, device)
        if _recording is not None and _recording.device_kind != recording.device_kind:
            _stop(_recording)
        elif _recording is not None:  # re-configured: the history, and its start, carry on
            recording = dataclasses.replace(recording, start_clocks_ns=_recording.start_clocks_ns)
        _start(recording)
        _recording = recording


def current() -> Recording | None:
    return _recording


def _new_recording(max_entries: int, stacks: str | None, device: str | None) -> Recording:
    if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
        raise ConfigError(f"max_entries: expected a positive integer, got {max_entries!r}")
    stacks = "none" if stacks is None else stacks
    if stacks not in STACKS:
        raise ConfigError(f"stacks: expected 'python', 'all' or None, got {stacks!r}")
    return Recording(_device_kind(device), max_entries, stacks, pf.read_clocks_ns())


def _device_kind(device: str | None) -> str:
    if device is None:
        return env.accelerator_type() or CPU
    kind = torch.device(device).type
    if kind not in SOURCE_BY_DEVICE:
        raise ConfigError(f"device: memory history is recorded for 'cpu' or 'cuda', not {device!r}")
    if kind == "cuda" and not torch.cuda.is_available():
        raise ConfigError("device: 'cuda' was asked for, but torch sees no CUDA device")
    return kind


def _start(recording: Recording) -> None:
    if recording.device_kind == CPU:
        from kinetoscope.capture import alloc_hook

        alloc_hook.load().start(recording.max_entries, recording.stacks != "none", recording.stacks == "all")
        return
    context = None if recording.stacks == "none" else "all"
    stacks = "all" if recording.stacks == "all" else "python"
    torch.cuda.memory._record_memory_history(
        enabled="all", context=context, stacks=stacks, max_entries=recording.max_entries
    )


def _stop(recording: Recording) -> None:
    if recording.device_kind == CPU:
        from kinetoscope.capture import alloc_hook

        alloc_hook.load().stop()
    else:
        torch.cuda.memory._record_memory_history(enabled=None)


def take_snapshot() -> tuple[dict[str, Any], SnapshotCounts, Recording]:
    """The history recorded so far, in PyTorch's snapshot structure; raises if nothing is recorded."""
    recording = _recording
    if recording is None:
        raise SessionError(
            "export_snapshot: no memory history is being recorded; call "
            "kinetoscope.memory.record_memory_history() before the allocations you want to see, "
            "and export before record_memory_history(enabled=False)"
        )
    if recording.device_kind == CPU:
        snapshot, counts = _cpu_snapshot()
    else:
        snapshot = torch.cuda.memory._snapshot()
        kept = sum(1 for trace in snapshot.get("device_traces", []) for e in trace if e["action"] != "free_requested")
        counts = SnapshotCounts(kept, kept)  # the caching allocator does not say how many it dropped
    return snapshot, counts, recording


def _cpu_snapshot() -> tuple[dict[str, Any], SnapshotCounts]:
    from kinetoscope.capture import alloc_hook

    entries, live, frames, tracebacks, total, _ = alloc_hook.load().snapshot()
    frame_dicts = [{"filename": f, "name": n, "line": int(line)} for f, n, line in frames]
    stacks = [[frame_dicts[i] for i in tb] for tb in tracebacks]
    trace = _cpu_trace(entries, stacks)
    snapshot = {"segments": _cpu_segments(live, stacks), "device_traces": [trace]}
    if total > len(entries):
        warnings.warn(
            f"kinetoscope: memory history kept the last {len(entries)} of {total} allocation events "
            "(max_entries); raise max_entries to keep more",
            stacklevel=3,
        )
    return snapshot, SnapshotCounts(len(entries), total)


def _cpu_trace(entries: list[Any], stacks: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    trace: list[dict[str, Any]] = []
    for action, addr, size, time_ns, stack in entries:
        frames = stacks[stack] if stack >= 0 else []
        base = {"addr": addr, "size": size, "stream": 0, "time_us": time_ns // 1000, "frames": frames}
        if action == 0:
            trace.append({"action": "alloc", **base})
        else:
            trace.extend({"action": name, **base} for name in _FREE_ACTIONS)
    return trace


def _cpu_segments(live: list[Any], stacks: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Each live CPU block is its own segment: the CPU allocator keeps no cache to carve from."""
    segments = []
    for addr, size, _time_ns, stack in sorted(live):
        frames = stacks[stack] if stack >= 0 else []
        block = {"address": addr, "size": size, "requested_size": size, "state": "active_allocated", "frames": frames}
        segments.append({
            "device": 0, "address": addr, "total_size": size, "allocated_size": size, "active_size": size,
            "requested_size": size, "stream": 0,
            "segment_type": "large" if size >= _LARGE_SEGMENT_BYTES else "small",
            "segment_pool_id": (0, 0), "is_expandable": False, "frames": frames, "blocks": [block],
        })
    return segments

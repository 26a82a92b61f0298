"""Flight recorder: keep memory history from the start, dump a snapshot when something goes wrong.

``FlightRecorder.start()`` records every allocation and free (``capture.memory.history``: PyTorch's
caching-allocator history on CUDA, kinetoscope's allocator hook on CPU), bounded to the last
``max_entries`` events, and arms three dumps:

- an out-of-memory error (``torch.OutOfMemoryError`` or ``MemoryError``, also as the cause
  or context of another error) that reaches the top of the main thread (``sys.excepthook``)
  or of another thread (``threading.excepthook``);
- on CUDA, the allocator's out-of-memory observer, called before the error is raised (so a
  program that catches the error still gets one dump, the first);
- a signal (SIGUSR2 by default), after which the program carries on.

Each dump is a session directory of its own under ``out`` holding ``trace_info.pb`` and the
snapshot (``memory_snapshot_rank<N>.pickle``, PyTorch's format), with no trace: its
``MemorySnapshot.trigger`` says what set it off. Recording stays on after a dump.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from kinetoscope.capture.running.run_settings import DEFAULT_DUMP_SIGNAL as DEFAULT_SIGNAL
from kinetoscope.capture.running.run_settings import DEFAULT_FLIGHT_MAX_ENTRIES as DEFAULT_MAX_ENTRIES
from kinetoscope.capture.running.run_settings import parse_dump_signal

OOM_NAMES = ("OutOfMemoryError", "MemoryError")

ExceptHook = Callable[[type[BaseException], BaseException, TracebackType | None], Any]


def is_out_of_memory(error: BaseException | None) -> bool:
    """Whether ``error``, its cause or its context is an out-of-memory error."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if any(cls.__name__ in OOM_NAMES for cls in type(error).__mro__):
            return True
        error = error.__cause__ or error.__context__
    return False


class FlightRecorder:
    """Memory history kept from ``start()``, dumped into a new session under ``out`` on demand."""

    def __init__(
        self, out: Path, *, max_entries: int = DEFAULT_MAX_ENTRIES, dump_signal: str | int | None = DEFAULT_SIGNAL
    ) -> None:
        self.out = Path(out).resolve()
        self.max_entries = max_entries
        self.dump_signal = parse_dump_signal(dump_signal) if dump_signal is not None else None
        self.dumps: list[Path] = []
        self.oom_observed = False
        self._lock = threading.Lock()
        self._previous_hook: ExceptHook | None = None
        self._previous_thread_hook: Callable[[Any], Any] | None = None

    def start(self) -> FlightRecorder:
        """Record memory history and arm the dumps (the signal only from the main thread)."""
        from kinetoscope.capture.memory.history import record_memory_history

        record_memory_history(max_entries=self.max_entries)
        self._previous_hook, sys.excepthook = sys.excepthook, self.on_exception
        self._previous_thread_hook, threading.excepthook = threading.excepthook, self.on_thread_exception
        self._arm_signal()
        self._attach_cuda_observer()
        return self

    def dump(self, trigger: str) -> Path | None:
        """Write the history so far into a new session; its snapshot's path, or None (said on stderr)."""
        if not self._lock.acquire(blocking=False):  # a signal during a dump: that dump stands for both
            _say(f"flight recorder: a dump is under way; {trigger} adds none")
            return None
        try:
            path = _write_dump(self.out, len(self.dumps), trigger)
            self.dumps.append(path)
        except Exception as exc:  # noqa: BLE001 - a failed dump must not add to the program's trouble
            _say(f"flight recorder: could not write the memory snapshot ({trigger}): {type(exc).__name__}: {exc}")
            return None
        finally:
            self._lock.release()
        _say(f"flight recorder: memory snapshot ({trigger}) written: {path}")
        return path

    def on_exception(self, kind: type[BaseException], error: BaseException, tb: TracebackType | None) -> None:
        if is_out_of_memory(error) and not self.oom_observed:
            self.dump(f"out of memory: {kind.__name__}: {error}"[:500])
        hook = self._previous_hook or sys.__excepthook__
        hook(kind, error, tb)

    def on_thread_exception(self, args: Any) -> None:
        if is_out_of_memory(args.exc_value) and not self.oom_observed:
            name = getattr(args.thread, "name", "?")
            self.dump(f"out of memory in thread {name}: {args.exc_type.__name__}: {args.exc_value}"[:500])
        (self._previous_thread_hook or threading.__excepthook__)(args)

    def _arm_signal(self) -> None:
        if self.dump_signal is None:
            return
        if threading.current_thread() is not threading.main_thread():
            _say(f"flight recorder: no dump on {self.dump_signal.name}: armed outside the main thread")
            return
        signal.signal(self.dump_signal, self._on_signal)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        self.dump(f"signal {signal.Signals(signum).name}")

    def _attach_cuda_observer(self) -> None:
        import torch

        attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)
        if attach is None or not torch.cuda.is_available():
            return
        try:
            attach(self.on_cuda_oom)
        except Exception as exc:  # noqa: BLE001 - the excepthook still dumps
            _say(f"flight recorder: CUDA out-of-memory observer unavailable: {exc}")

    def on_cuda_oom(self, device: int, alloc_bytes: int, device_allocated_bytes: int, device_free_bytes: int) -> None:
        if self.oom_observed:
            return
        self.oom_observed = True
        self.dump(
            f"out of memory: cuda:{device} could not allocate {alloc_bytes} bytes "
            f"({device_allocated_bytes} allocated, {device_free_bytes} free)"
        )


def _write_dump(out: Path, cycle: int, trigger: str) -> Path:
    """A session with ``trace_info.pb`` and the snapshot only (no trace, no modes)."""
    from kinetoscope.capture.memory import snapshots
    from kinetoscope.capture.profiling.config import ProfileConfig
    from kinetoscope.capture.profiling.session import clock_snapshot, new_session
    from kinetoscope.format.session_files import trace_info as ti

    session = new_session(ProfileConfig(profile_output_dir=out), cycle, None)
    info = session.info
    del info.config.modes[:]  # nothing was profiled: verify expects no mode files
    info.stop_clocks.CopyFrom(clock_snapshot())
    info.state = ti.SessionState.SESSION_STATE_COMPLETE
    ti.write_trace_info(session.path, info)
    return snapshots.export_snapshot(trigger=trigger, session=session.path)


def _say(message: str) -> None:
    print(f"kinetoscope (pid {os.getpid()}): {message}", file=sys.stderr, flush=True)


_recorder: FlightRecorder | None = None
_recorder_lock = threading.Lock()


def current() -> FlightRecorder | None:
    return _recorder


def flight_recorder(
    out: str | os.PathLike[str] = "./profile_output",
    *,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    dump_signal: str | int | None = DEFAULT_SIGNAL,
) -> FlightRecorder:
    """Keep memory history from now on and dump a snapshot into a session under ``out`` on an
    out-of-memory error or on ``dump_signal``; once per process (later calls return the first)."""
    global _recorder
    with _recorder_lock:
        if _recorder is None:
            _recorder = FlightRecorder(Path(out), max_entries=max_entries, dump_signal=dump_signal).start()
        return _recorder

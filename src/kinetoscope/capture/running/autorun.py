"""Capture inside an unmodified program: count step boundaries, profile the chosen steps, export at exit.

``install(settings)`` runs at interpreter start (from the injected ``sitecustomize``). It
imports nothing heavy: the step source is attached once the program imports torch (or the
module holding ``--step-fn``), and torch's profiler and kinetoscope's exporter are only
imported when a capture starts. While no capture is due, a step boundary costs one counter
increment and one comparison.

A capture is a ``torch.profiler.profile`` with a schedule, created at the step boundary
where it is first needed with its step number set to ours, so its ``ProfilerStep#N``
markers carry the program's step numbers. It ends when its schedule does, at interpreter
exit, or (on demand) after the requested steps.
"""

from __future__ import annotations

import atexit
import dataclasses
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kinetoscope._errors import KinetoscopeError
from kinetoscope.capture.running import import_hooks, step_sources
from kinetoscope.capture.running.run_settings import RunSettings, Schedule

ARTIFACT_CACHE_ENV = "KINETOSCOPE_ARTIFACT_CACHE_DIR"  # capture.config's, without importing torch


@dataclass
class CaptureRequest:
    """A capture of the next ``steps`` steps asked for on demand; ``done`` is set when it has ended."""

    steps: int
    modes: tuple[str, ...] | None = None
    with_stack: bool | None = None
    record_shapes: bool | None = None
    out: Path | None = None
    sessions: list[Path] = field(default_factory=list)
    error: str = ""
    done: threading.Event = field(default_factory=threading.Event)

    def settings(self, base: RunSettings) -> RunSettings:
        overrides = {name: getattr(self, name) for name in ("modes", "with_stack", "record_shapes", "out")}
        return dataclasses.replace(base, **{k: v for k, v in overrides.items() if v is not None})

    def finish(self, sessions: list[Path], error: str = "") -> None:
        self.sessions, self.error = sessions, error
        self.done.set()


class Capture:
    """One ``torch.profiler.profile`` run over a schedule, exported by a kinetoscope ``Profiler``."""

    def __init__(self, settings: RunSettings, schedule: Schedule, step: int) -> None:
        import torch.profiler

        from kinetoscope.capture.memory.history import record_memory_history
        from kinetoscope.capture.profiling.config import ProfileConfig
        from kinetoscope.capture.profiling.environment import activities
        from kinetoscope.capture.profiling.profiler import Profiler
        from kinetoscope.capture.running import flight_recorder

        self.settings, self.schedule = settings, schedule
        config = ProfileConfig(modes=list(settings.modes), profile_output_dir=settings.out)
        self.exporter = Profiler(config)
        if settings.memory and flight_recorder.current() is None:  # the flight recorder's history serves
            record_memory_history()
        self.prof = torch.profiler.profile(
            activities=activities(),
            schedule=torch.profiler.schedule(**dataclasses.asdict(schedule)),
            experimental_config=config,
            on_trace_ready=self.exporter.export_trace,
            record_shapes=settings.record_shapes,
            with_stack=settings.with_stack,
            profile_memory=settings.memory,
        )
        _set_step(self.prof, step)
        self.prof.__enter__()  # type: ignore[no-untyped-call]

    def step(self, step: int) -> bool:
        """Advance to ``step``; True once the schedule has ended."""
        from torch.profiler import ProfilerAction

        if self.prof.current_action == ProfilerAction.RECORD_AND_SAVE:
            self._wait_for_device()  # this step() stops the trace
        self.prof.step()
        end = self.schedule.end_step
        return end is not None and step >= end

    def finish(self) -> list[Path]:
        """Stop (exporting a cycle still recording), write the memory snapshot; return the sessions."""
        try:
            self._wait_for_device()
            self.prof.__exit__(None, None, None)  # type: ignore[no-untyped-call]
        finally:
            if self.settings.memory:
                self._finish_memory()
        return list(self.exporter.sessions)

    @staticmethod
    def _wait_for_device() -> None:
        """Let the recorded steps' device work finish before the trace stops (a no-op on a CPU-only host),
        so their last kernels are in it; only at the end of a cycle, so the steps keep their overlap."""
        from kinetoscope.capture.profiling.environment import synchronize

        synchronize()

    def _finish_memory(self) -> None:
        from kinetoscope.capture.memory.history import record_memory_history
        from kinetoscope.capture.running import flight_recorder

        try:
            if self.exporter.sessions:
                self.exporter.export_snapshot()
        finally:
            if flight_recorder.current() is None:  # the flight recorder keeps the history on
                record_memory_history(enabled=False)


def _set_step(prof: Any, step: int) -> None:
    """Number the profiler's steps as the program's: its next ``ProfilerStep#`` marker is ``step``."""
    action = prof.schedule(step)
    prof.step_num = step
    prof.current_action = action
    if hasattr(prof, "_prev_schedule_action"):
        prof._prev_schedule_action = action


class Controller:
    """Counts step boundaries and starts, advances and ends captures at them."""

    def __init__(self, settings: RunSettings) -> None:
        self.settings = settings
        self.step = 0
        self.capture: Capture | None = None
        self.request: CaptureRequest | None = None
        self.pending: CaptureRequest | None = None
        self.planned_start = settings.schedule.first_step if settings.schedule is not None else -1
        self.listening = False
        self._lock = threading.Lock()

    def boundary(self) -> None:
        """A step ended and the next one begins; cheap unless a capture is due or running."""
        self.step += 1
        if self.capture is not None or self.pending is not None or self.step >= self.planned_start >= 0:
            self._advance()
        if self.settings.on_demand and not self.listening:
            self._listen()

    def ask(self, request: CaptureRequest) -> str:
        """Queue an on-demand capture for the next step boundary; an error message when one is under way."""
        with self._lock:
            if self.pending is not None or self.capture is not None:
                return f"pid {os.getpid()} is already capturing; try again when it has finished"
            self.pending = request
        return ""

    def _advance(self) -> None:
        if self.capture is not None:
            if self.capture.step(self.step):
                self._end_capture()
        elif self.pending is not None:
            self._start_requested()
        elif self.settings.schedule is not None and self.step >= self.planned_start >= 0:
            self.planned_start = -1
            self._start(self.settings, self.settings.schedule)

    def _start_requested(self) -> None:
        with self._lock:
            request, self.pending = self.pending, None
        assert request is not None
        self.request = request
        schedule = Schedule(skip_first=self.step, wait=0, warmup=1, active=request.steps, repeat=1)
        self._start(request.settings(self.settings), schedule)

    def _start(self, settings: RunSettings, schedule: Schedule) -> None:
        try:
            self.capture = Capture(settings, schedule, self.step)
        except Exception as exc:  # noqa: BLE001 - a capture that cannot start must not end the program
            self._report([], f"could not start the capture: {type(exc).__name__}: {exc}")

    def _end_capture(self) -> None:
        capture, self.capture = self.capture, None
        assert capture is not None
        try:
            sessions = capture.finish()
        except Exception as exc:  # noqa: BLE001 - report it; the program goes on
            self._report([], f"the capture failed: {type(exc).__name__}: {exc}")
            return
        self._report(sessions, "")

    def _report(self, sessions: list[Path], error: str) -> None:
        request, self.request = self.request, None
        if request is not None:
            request.finish(sessions, error)
        for session in sessions:
            _say(f"session written: {session}")
        if error:
            _say(error)

    def _listen(self) -> None:
        from kinetoscope.capture.running import on_demand

        self.listening = True
        try:
            on_demand.listen(self)
        except (OSError, KinetoscopeError) as exc:
            _say(f"on-demand capture unavailable: {exc}")

    def at_exit(self) -> None:
        """The program ends: export a capture still running, and say when the steps were never reached."""
        if self.capture is not None:
            self._end_capture()
        if self.pending is not None:
            self.pending.finish([], f"pid {os.getpid()} ended before its next step")
        schedule = self.settings.schedule
        if self.planned_start >= 0 and self.step > 0 and schedule is not None:
            _say(
                f"the program ran {self.step} steps and ended before step {schedule.first_recorded_step}; "
                "nothing was captured. Choose earlier steps (--steps), or name the step function "
                "(--step-fn module:function)"
            )


def _say(message: str) -> None:
    print(f"kinetoscope (pid {os.getpid()}): {message}", file=sys.stderr, flush=True)


_controller: Controller | None = None
_lock = threading.Lock()


def install(settings: RunSettings) -> Controller:
    """Start counting steps (once the program imports their source) with ``settings``; once per process."""
    global _controller
    with _lock:
        if _controller is not None:
            return _controller
        controller = _controller = Controller(settings)
    atexit.register(controller.at_exit)
    _prepare_compile(os.environ)
    if settings.flight_recorder:
        import_hooks.when_imported("torch", lambda _: _start_flight_recorder(settings))
    if settings.step_fn:
        module, function = settings.step_fn.split(":", 1)
        import_hooks.when_imported(module, lambda m: step_sources.wrap_function(m, function, controller.boundary))
    else:
        import_hooks.when_imported("torch", lambda _: step_sources.count_optimizer_steps(controller.boundary))
    return controller


def _prepare_compile(environ: Any) -> None:
    """With ``KINETOSCOPE_ARTIFACT_CACHE_DIR`` set, point torch.compile at it and turn on Inductor's
    provenance tracking now, before the program compiles its warm-up steps (the capture starts later)."""
    from kinetoscope.capture.compiled import provenance

    cache_dir = environ.get(ARTIFACT_CACHE_ENV, "").strip()
    if cache_dir:
        environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.abspath(cache_dir))
        provenance.enable(environ)


def _start_flight_recorder(settings: RunSettings) -> None:
    from kinetoscope.capture.running import flight_recorder

    try:
        flight_recorder.flight_recorder(
            settings.out, max_entries=settings.flight_max_entries, dump_signal=settings.dump_signal
        )
    except Exception as exc:  # noqa: BLE001 - the program runs on without it
        _say(f"flight recorder unavailable: {type(exc).__name__}: {exc}")


def on_demand(out: str | os.PathLike[str] | None = None) -> Path:
    """Listen for ``kinetoscope trigger`` in this process; return the socket's path.

    Steps are counted by optimizer steps (or by ``KINETOSCOPE_STEP_FN`` under ``kinetoscope run``).
    """
    from kinetoscope.capture.running import on_demand as listener
    from kinetoscope.capture.running import run_settings

    settings = run_settings.from_env() if run_settings.enabled() else RunSettings(schedule=None)
    settings = dataclasses.replace(settings, on_demand=True, out=Path(out) if out is not None else settings.out)
    controller = install(settings)
    controller.settings = dataclasses.replace(controller.settings, on_demand=True, out=settings.out)
    if not controller.listening:
        controller.listening = True
        listener.listen(controller)
    return listener.socket_path(os.getpid())

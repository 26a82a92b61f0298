"""``Profiler``: the exporter that turns each torch.profiler cycle into a session directory."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import threading
import warnings
import weakref
from pathlib import Path
from typing import Any

from kinetoscope._errors import SessionError
from kinetoscope.capture.compiled import artifacts
from kinetoscope.capture.memory import snapshots
from kinetoscope.capture.profiling import hooks, termination
from kinetoscope.capture.profiling.config import ProfileConfig, ProfileMode
from kinetoscope.capture.profiling.session import (
    MODE_TO_PB,
    SAMPLED_MODES,
    LiveSession,
    clock_snapshot,
    fill_profiler_options,
    new_session,
    wants_samples,
)
from kinetoscope.capture.system import system_trace
from kinetoscope.capture.system.sampler_process import SamplerProcess
from kinetoscope.convert.conversion import record_conversion
from kinetoscope.format.files import discard
from kinetoscope.format.kineto import kineto_json
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti

_BASE_TIME_RE = re.compile(rb'"baseTimeNanoseconds"\s*:\s*(\d+)')
_HEADER_SCAN_BYTES = 64 * 1024


class Profiler:
    """Exports each profiling cycle of ``torch.profiler.profile`` into a session directory.

    Pass ``Profiler(config).export_trace`` as ``on_trace_ready`` and the same ``config`` as
    ``experimental_config``. Samplers (CPU_UTIL, HOST_MEMORY) run from the profiler's
    start to its stop; ``export_trace`` writes the framework trace and the system and
    device files, then seals the session with a manifest in ``trace_info.pb``.
    """

    def __init__(self, config: ProfileConfig) -> None:
        if not isinstance(config, ProfileConfig):
            raise TypeError(f"Profiler needs a kinetoscope.ProfileConfig, got {type(config).__name__}")
        self.config = config
        self._lock = threading.Lock()
        self._cycle = 0
        self._pending: LiveSession | None = None
        self._exported_profiles: list[Any] = []
        self.sessions: list[Path] = []
        check_writable(config.profile_output_dir)
        self._sampler: SamplerProcess | None = SamplerProcess() if wants_samples(config) else None
        if self._sampler is not None:
            weakref.finalize(self, self._sampler.close)
        self._kernels = artifacts.KernelCapture(config)
        hooks.register(config, self)

    @property
    def sampler_pid(self) -> int | None:
        """Process id of the sampler helper process, or None when no sampled mode is on."""
        return self._sampler.pid if self._sampler is not None else None

    @property
    def current_session(self) -> Path | None:
        """The most recent session directory of this exporter, or None before the first one."""
        return self.sessions[-1] if self.sessions else None

    def on_profiler_start(self, torch_profile: Any) -> None:
        termination.arm()
        self._kernels.on_profiler_start()
        with self._lock:
            session = new_session(self.config, self._next_cycle(), torch_profile)
            self._pending = session
            if self._sampler is None:
                return
            try:
                session.start_samplers(self._sampler)
            except SessionError as exc:
                session.info.warnings.append(str(exc))
                for mode in SAMPLED_MODES:
                    session.sampler_reasons[mode] = str(exc)

    def on_profiler_stop(self) -> None:
        with self._lock:
            if self._pending is not None:
                self._pending.stop()

    def export_trace(self, prof: Any) -> Path:
        """``on_trace_ready`` callback: write this cycle's session directory and return its path."""
        torch_profile = _finished_profile(prof)
        if getattr(prof, "experimental_config", self.config) is not self.config:
            raise SessionError(
                "export_trace: this profiler was not started with this exporter's config; "
                "pass the same ProfileConfig as experimental_config="
            )
        with self._lock:
            if any(p is torch_profile for p in self._exported_profiles):
                raise SessionError("export_trace: this profiling cycle was already exported")
            session = self._take_session(prof)
            self._exported_profiles = [*self._exported_profiles[-7:], torch_profile]
        try:
            with termination.exporting():
                self._write_session(session, prof)
        except BaseException as exc:
            _mark_failed(session, exc)
            if isinstance(exc, OSError):
                raise SessionError(f"export of {session.path} failed: {exc.strerror or exc}") from exc
            raise
        finally:
            termination.disarm()
        self.sessions.append(session.path)
        snapshots.note_session(session.path)
        return session.path

    def export_snapshot(self, filename: str | None = None) -> Path:
        """Write the recorded memory history into this process's latest session; return its path.

        Call it after the profiled region (once ``export_trace`` has run) and before
        ``kinetoscope.memory.record_memory_history(enabled=False)``. The default name is
        ``memory_snapshot_rank<N>.pickle``; see docs/memory.md.
        """
        with self._lock:
            if self._pending is not None and not self._pending.exported:
                raise SessionError(
                    "export_snapshot: the profiler is still recording; call it after the profiled region"
                )
        return snapshots.export_snapshot(filename)

    def _next_cycle(self) -> int:
        cycle = self._cycle
        self._cycle += 1
        return cycle

    def _take_session(self, prof: Any) -> LiveSession:
        session, self._pending = self._pending, None
        if session is None or session.exported:
            session = new_session(self.config, self._next_cycle(), prof)
            for mode in SAMPLED_MODES:
                session.sampler_reasons[mode] = "the profiler's start was not observed, so no samples were taken"
        session.stop()
        session.exported = True
        return session

    def _write_session(self, session: LiveSession, prof: Any) -> None:
        info = session.info
        fill_profiler_options(info.profiler_options, prof)
        trace_path = write_framework_trace(prof, session.path)
        info.profiler_base_time_ns = _base_time_ns(trace_path)
        outcomes, known_sha256 = self._write_mode_files(session, trace_path)
        del info.modes[:]
        info.modes.extend(outcomes)
        self._kernels.export(session.path, trace_path, info)
        info.files.extend(ti.build_manifest(session.path, known_sha256))
        info.state = ti.SessionState.SESSION_STATE_COMPLETE
        ti.write_trace_info(session.path, info)

    def _write_mode_files(self, session: LiveSession, trace_path: Path) -> tuple[list[Any], dict[str, str]]:
        """The outcome of each mode, and trace.json's hash when the conversion made it (its pass reads the file)."""
        traces = None
        if ProfileMode.RUNTIME in self.config.modes or ProfileMode.DEVICE in self.config.modes:
            traces = self._write_event_traces(session, trace_path)
        outcomes = []
        for mode in self.config.modes:
            files, reason = self._mode_files(session, mode, traces)
            outcomes.append(ti.ModeOutcome(mode=MODE_TO_PB[mode], files=files, reason=reason))
        known = {layout.TRACE_JSON: traces.trace_sha256} if traces is not None and traces.trace_sha256 else {}
        return outcomes, known

    def _write_event_traces(self, session: LiveSession, trace_path: Path) -> system_trace.EventTraces:
        traces = system_trace.write_event_traces(session, trace_path)
        record_conversion(session.info, traces.stats, traces.problems)
        messages = system_trace.drop_warnings(traces.stats, self.config.max_events_per_device)
        session.info.warnings.extend(messages)
        system_trace.warn_drops(messages)
        return traces

    def _mode_files(
        self, session: LiveSession, mode: ProfileMode, traces: system_trace.EventTraces | None
    ) -> tuple[list[str], str]:
        if mode is ProfileMode.RUNTIME and traces is not None:
            return traces.runtime_files, traces.runtime_reason
        if mode is ProfileMode.DEVICE and traces is not None:
            return traces.device_files, traces.device_reason
        name, _ = SAMPLED_MODES[mode]
        if (session.path / name).exists():
            return [name], ""
        return [], session.sampler_reasons.get(mode, f"{name} was not written (see warnings)")


def _finished_profile(prof: Any) -> Any:
    """The torch profile object of the cycle that just ended; raise if the profiler never ran."""
    torch_profile = getattr(prof, "profiler", prof)
    if torch_profile is None or getattr(torch_profile, "kineto_results", None) is None:
        raise SessionError(
            "export_trace: the profiler has not run a cycle yet (no results); call it as "
            "on_trace_ready, or after the `with profile(...)` block has exited"
        )
    return torch_profile


def write_framework_trace(prof: Any, session_path: Path) -> Path:
    """torch.profiler's own Chrome-trace export, written under a temporary name then renamed."""
    final = session_path / layout.TRACE_JSON
    tmp = layout.temp_path(final)
    try:
        prof.export_chrome_trace(str(tmp))
        if not tmp.exists():  # torch logs its write error ("Failed to write to log file!") and returns
            raise SessionError(f"cannot write {final}: {_why_not_written(session_path)}")
        _rename_in_tail(tmp, final)
        os.replace(tmp, final)
    except (OSError, RuntimeError) as exc:
        raise SessionError(f"cannot write {final}: {_why_not_written(session_path, exc)}") from exc
    finally:
        for leftover in (tmp, layout.temp_path(tmp)):  # torch writes through a temporary file of its own
            if leftover.exists() and not final.exists():
                discard(leftover)
    return final


_LOW_SPACE_BYTES = 64 << 20


def _why_not_written(folder: Path, exc: BaseException | None = None) -> str:
    """What stopped the framework trace: a full disk (named with its free space), else the error."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        free = None
    if free is not None and free < _LOW_SPACE_BYTES:
        return f"the disk holding {folder} is full ({free:,} bytes free): free space or profile to another folder"
    if exc is not None:
        return str(exc.strerror or exc) if isinstance(exc, OSError) else str(exc)
    return "torch.profiler did not write it (its own error is logged above)"


_TAIL_SCAN_BYTES = 64 << 10


def _rename_in_tail(tmp: Path, final: Path) -> None:
    """torch records the path it wrote to as the trace's ``traceName`` (at the end of the file):
    make it the file's final name rather than the temporary one."""
    old, new = json.dumps(str(tmp)).encode(), json.dumps(str(final)).encode()
    with open(tmp, "r+b") as handle:
        size = handle.seek(0, os.SEEK_END)
        start = max(0, size - _TAIL_SCAN_BYTES)
        handle.seek(start)
        tail = handle.read()
        at = tail.rfind(b'"traceName": ' + old)
        if at < 0:
            return
        handle.seek(start + at)
        handle.write(tail[at:].replace(old, new, 1))
        handle.truncate()


def _base_time_ns(trace_path: Path) -> int:
    """Kineto's ``baseTimeNanoseconds``, the time ``trace.json``'s timestamps are relative to; 0 when
    they are epoch microseconds. torch writes it near the head; the full metadata read is the fallback."""
    with open(trace_path, "rb") as handle:
        match = _BASE_TIME_RE.search(handle.read(_HEADER_SCAN_BYTES))
    if match:
        return int(match.group(1))
    base = kineto_json.read_trace_metadata(trace_path).get("baseTimeNanoseconds")
    return base if type(base) is int and base > 0 else 0


def _mark_failed(session: LiveSession, exc: BaseException) -> None:
    info = session.info
    info.state = ti.SessionState.SESSION_STATE_FAILED
    info.error = f"{type(exc).__name__}: {exc}"
    if not info.HasField("stop_clocks"):
        info.stop_clocks.CopyFrom(clock_snapshot())
    try:
        ti.write_trace_info(session.path, info)
    except SessionError:
        warnings.warn(f"kinetoscope: could not mark {session.path} as failed; it stays in progress", stacklevel=3)


def check_writable(directory: Path) -> None:
    """Fail now, before profiling, if sessions cannot be written under ``directory``."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(prefix=".kinetoscope-write-test-", dir=directory)
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        raise SessionError(
            f"profile_output_dir {str(directory)!r} is not writable: {exc.strerror or exc}; "
            "choose a directory this process can create and write"
        ) from exc

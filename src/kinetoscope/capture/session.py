"""One profiling cycle's session directory while it is being captured and exported."""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kinetoscope._errors import SessionError
from kinetoscope._version import __version__
from kinetoscope.capture import environment as env
from kinetoscope.capture.config import ProfileConfig, ProfileMode
from kinetoscope.capture.sampler_process import SamplerProcess
from kinetoscope.capture.samplers import CpuUtilSampler, HostMemorySampler
from kinetoscope.format.perfetto_packets import perfetto as pf
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti

MODE_TO_PB = {
    ProfileMode.DEVICE: ti.Mode.MODE_DEVICE,
    ProfileMode.RUNTIME: ti.Mode.MODE_RUNTIME,
    ProfileMode.CPU_UTIL: ti.Mode.MODE_CPU_UTIL,
    ProfileMode.HOST_MEMORY: ti.Mode.MODE_HOST_MEMORY,
}
_SESSION_DIR_ATTEMPTS = 1000
# mode -> (file name, sampler name)
SAMPLED_MODES = {
    ProfileMode.CPU_UTIL: (layout.CPU_UTIL, CpuUtilSampler.name),
    ProfileMode.HOST_MEMORY: (layout.HOST_MEMORY, HostMemorySampler.name),
}


def clock_snapshot() -> Any:
    clocks = pf.read_clocks_ns()
    return ti.ClockSnapshot(
        realtime_ns=clocks[pf.CLOCK_REALTIME],
        monotonic_ns=clocks[pf.CLOCK_MONOTONIC],
        boottime_ns=clocks[pf.CLOCK_BOOTTIME],
        perf_counter_ns=time.perf_counter_ns(),
    )


@dataclass
class LiveSession:
    """A session directory from the profiler's start to the end of its export."""

    config: ProfileConfig
    path: Path
    info: Any
    cycle: int
    sampler_process: SamplerProcess | None = None
    sample_files: list[Path] = field(default_factory=list)
    sampler_reasons: dict[ProfileMode, str] = field(default_factory=dict)
    stopped: bool = False
    exported: bool = False

    @property
    def identity(self) -> Any:
        return self.info.identity

    def header(self, file_kind: str) -> pf.FileHeader:
        return ti.file_header(self.identity, file_kind)

    def start_samplers(self, process: SamplerProcess) -> None:
        """Have the sampler process write this session's sample files, as ``.partial`` until stop."""
        files = []
        for mode in self.config.modes:
            if mode in SAMPLED_MODES:
                name, kind = SAMPLED_MODES[mode]
                path = self.path / layout.partial_name(name)
                files.append({"kind": kind, "path": str(path), "header": dataclasses.asdict(self.header(kind))})
        if files:
            process.start(os.getpid(), self.config.sample_interval_ms, files)
            self.sampler_process = process
            self.sample_files = [Path(str(f["path"])) for f in files]

    def stop(self) -> None:
        """Stop sampling and give the sample files their final names."""
        if self.stopped:
            return
        self.stopped = True
        self.info.stop_clocks.CopyFrom(clock_snapshot())
        if self.sampler_process is None:
            return
        try:
            self.sampler_process.stop()
        except SessionError as exc:
            self.info.warnings.append(str(exc))
        for partial in self.sample_files:
            _rename_partial(partial)


def _rename_partial(partial: Path) -> Path:
    final = partial.with_name(partial.name.removesuffix(layout.PARTIAL_SUFFIX))
    try:
        os.replace(partial, final)
    except OSError as exc:
        raise SessionError(f"cannot finish {final}: {exc.strerror or exc}") from exc
    return final


def new_session(config: ProfileConfig, cycle: int, torch_profile: Any | None) -> LiveSession:
    """Create the session directory and write its in-progress ``trace_info.pb``."""
    start = clock_snapshot()
    inst = env.instance()
    pid = os.getpid()
    path = _create_session_dir(config.profile_output_dir, inst.instance_id, pid, start.realtime_ns, cycle)
    info = _initial_info(config, path, inst=inst, pid=pid, cycle=cycle, start=start, torch_profile=torch_profile)
    ti.write_trace_info(path, info)
    return LiveSession(config=config, path=path, info=info, cycle=cycle)


def _create_session_dir(output_dir: Path, instance_id: str, pid: int, realtime_ns: int, cycle: int) -> Path:
    """Create a session directory no other process or exporter holds.

    Names are unique per process (pid) and per exporter cycle; two exporters of one process
    starting in the same microsecond, or two hosts sharing a directory, an instance id and a
    pid, would still clash: creation is atomic, and a taken name moves to the next microsecond.
    """
    for attempt in range(_SESSION_DIR_ATTEMPTS):
        path = layout.session_path(output_dir, instance_id, pid, realtime_ns + attempt * 1000, cycle)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.mkdir()
        except FileExistsError:
            continue
        except OSError as exc:
            raise SessionError(f"cannot create session directory {path}: {exc.strerror or exc}") from exc
        return path
    raise SessionError(f"cannot create a session directory under {output_dir}: {_SESSION_DIR_ATTEMPTS} names taken")


def _initial_info(
    config: ProfileConfig, path: Path, *, inst: env.Instance, pid: int, cycle: int, start: Any, torch_profile: Any
) -> Any:
    info = ti.new_trace_info()
    info.state = ti.SessionState.SESSION_STATE_IN_PROGRESS
    dist = env.dist_info()
    ident = info.identity
    ident.session_id = f"{path.parent.name}/{path.name}"
    ident.instance_id, ident.instance_source = inst.instance_id, inst.source
    ident.hostname = os.uname().nodename
    ident.pid, ident.cycle = pid, cycle
    ident.rank, ident.local_rank, ident.world_size = dist.rank, dist.local_rank, dist.world_size
    ident.rank_known, ident.backend = dist.known, dist.backend
    ident.job_id, ident.job_id_source = env.job_identity()
    versions = info.versions
    versions.kinetoscope, versions.torch = __version__, torch.__version__
    versions.python, versions.platform = env.python_version(), env.platform_name()
    versions.accelerator_runtime = env.accelerator_runtime()
    _fill_config(info.config, config)
    if torch_profile is not None:
        fill_profiler_options(info.profiler_options, torch_profile)
    info.start_clocks.CopyFrom(start)
    return info


def _fill_config(out: Any, config: ProfileConfig) -> None:
    s = config.settings
    out.modes.extend(MODE_TO_PB[m] for m in s.modes)
    out.profile_output_dir = str(s.profile_output_dir)
    out.max_events_per_device = s.max_events_per_device
    out.capture_enabled_for_devices = s.capture_enabled_for_devices or ""
    out.artifact_cache_dir = str(s.artifact_cache_dir or "")
    out.precache = s.precache
    out.sample_interval_ms = s.sample_interval_ms


def fill_profiler_options(out: Any, torch_profile: Any) -> None:
    """Copy the flags torch.profiler ran with (works for both profiler objects torch uses)."""
    for name in ("record_shapes", "profile_memory", "with_stack", "with_flops", "with_modules"):
        setattr(out, name, bool(getattr(torch_profile, name, False)))
    acts = getattr(torch_profile, "activities", None) or getattr(torch_profile, "kineto_activities", None) or ()
    del out.activities[:]
    out.activities.extend(sorted(str(a).rsplit(".", 1)[-1] for a in acts))
    out.scheduled = bool(getattr(torch_profile, "record_steps", False))


def wants_samples(config: ProfileConfig) -> bool:
    return any(mode in SAMPLED_MODES for mode in config.modes)

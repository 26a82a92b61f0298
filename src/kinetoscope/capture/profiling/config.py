"""``ProfileConfig``: what to capture, passed to ``torch.profiler.profile(experimental_config=...)``."""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch._C._profiler import _ExperimentalConfig

from kinetoscope._errors import ConfigError

DEFAULT_MAX_EVENTS_PER_DEVICE = 1_000_000
DEFAULT_SAMPLE_INTERVAL_MS = 100
ARTIFACT_CACHE_ENV = "KINETOSCOPE_ARTIFACT_CACHE_DIR"

_RANGE_RE = re.compile(r"^(\d+)(?:-(\d+))?$")


class ProfileMode(enum.Enum):
    """What a session captures; each mode produces its own files.

    - ``DEVICE``: device executions per device (``device_<N>.pb``).
    - ``RUNTIME``: the runtime layer between framework and device (``ntrace.pb``).
    - ``CPU_UTIL``: per-CPU and process CPU utilisation samples (``cpu_util.pb``).
    - ``HOST_MEMORY``: host and process memory samples (``host_mem.pb``).
    """

    DEVICE = "DEVICE"
    RUNTIME = "RUNTIME"
    CPU_UTIL = "CPU_UTIL"
    HOST_MEMORY = "HOST_MEMORY"


DEFAULT_MODES = (ProfileMode.DEVICE, ProfileMode.RUNTIME)


@dataclass(frozen=True)
class CaptureSettings:
    """The validated, immutable values behind a ``ProfileConfig``."""

    modes: tuple[ProfileMode, ...]
    profile_output_dir: Path
    max_events_per_device: int
    capture_enabled_for_devices: str | None
    devices: frozenset[int] | None
    artifact_cache_dir: Path | None
    precache: bool
    sample_interval_ms: int


class ProfileConfig(_ExperimentalConfig):
    """Capture configuration, accepted unchanged by ``torch.profiler.profile(experimental_config=...)``.

    Keyword arguments (all optional):

    - ``modes``: list of ``ProfileMode`` (or their names); default ``[DEVICE, RUNTIME]``.
    - ``profile_output_dir``: root of the session tree; default ``./profile_output``.
    - ``max_events_per_device``: keep at most this many device executions per device,
      the newest; the oldest are dropped, counted in ``trace_info.pb`` and warned about.
      Default 1,000,000.
    - ``capture_enabled_for_devices``: device indices and ranges, e.g. ``"0,1,2-5"``;
      default every device.
    - ``artifact_cache_dir``: where compiled kernels are cached; they are copied into the
      session on stop. Default: the ``KINETOSCOPE_ARTIFACT_CACHE_DIR`` environment variable,
      else none.
    - ``precache``: gather compiled-kernel metadata during warm-up rather than in the
      profiled step. Default True.
    - ``sample_interval_ms``: period of the CPU_UTIL and HOST_MEMORY samplers. Default 100 ms
      (about 0.6 % of one core in a helper process; see docs/capture.md).

    The config is immutable once built; invalid values raise ``ConfigError`` naming the
    parameter and the accepted form.
    """

    def __init__(
        self,
        *,
        modes: Iterable[ProfileMode | str] | None = None,
        profile_output_dir: str | os.PathLike[str] = "./profile_output",
        max_events_per_device: int = DEFAULT_MAX_EVENTS_PER_DEVICE,
        capture_enabled_for_devices: str | None = None,
        artifact_cache_dir: str | os.PathLike[str] | None = None,
        precache: bool = True,
        sample_interval_ms: int = DEFAULT_SAMPLE_INTERVAL_MS,
    ) -> None:
        super().__init__()
        cache_dir = artifact_cache_dir if artifact_cache_dir is not None else os.environ.get(ARTIFACT_CACHE_ENV)
        settings = CaptureSettings(
            modes=parse_modes(DEFAULT_MODES if modes is None else modes),
            profile_output_dir=Path(os.fspath(profile_output_dir)),
            max_events_per_device=_positive_int("max_events_per_device", max_events_per_device),
            capture_enabled_for_devices=capture_enabled_for_devices,
            devices=parse_device_spec(capture_enabled_for_devices),
            artifact_cache_dir=Path(cache_dir) if cache_dir else None,
            precache=_bool("precache", precache),
            sample_interval_ms=_positive_int("sample_interval_ms", sample_interval_ms),
        )
        object.__setattr__(self, "_settings", settings)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"ProfileConfig is immutable; build a new one instead of setting {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("ProfileConfig is immutable")

    def __copy__(self) -> ProfileConfig:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> ProfileConfig:
        return self

    @property
    def settings(self) -> CaptureSettings:
        settings: CaptureSettings = object.__getattribute__(self, "_settings")
        return settings

    @property
    def modes(self) -> tuple[ProfileMode, ...]:
        return self.settings.modes

    @property
    def profile_output_dir(self) -> Path:
        return self.settings.profile_output_dir

    @property
    def max_events_per_device(self) -> int:
        return self.settings.max_events_per_device

    @property
    def capture_enabled_for_devices(self) -> str | None:
        return self.settings.capture_enabled_for_devices

    @property
    def artifact_cache_dir(self) -> Path | None:
        return self.settings.artifact_cache_dir

    @property
    def precache(self) -> bool:
        return self.settings.precache

    @property
    def sample_interval_ms(self) -> int:
        return self.settings.sample_interval_ms

    def device_enabled(self, index: int) -> bool:
        devices = self.settings.devices
        return devices is None or index in devices

    def __repr__(self) -> str:
        s = self.settings
        modes = ", ".join(m.name for m in s.modes)
        return (
            f"ProfileConfig(modes=[{modes}], profile_output_dir={str(s.profile_output_dir)!r}, "
            f"max_events_per_device={s.max_events_per_device}, "
            f"capture_enabled_for_devices={s.capture_enabled_for_devices!r}, "
            f"artifact_cache_dir={str(s.artifact_cache_dir) if s.artifact_cache_dir else None!r}, "
            f"precache={s.precache}, sample_interval_ms={s.sample_interval_ms})"
        )


def parse_modes(modes: Iterable[ProfileMode | str]) -> tuple[ProfileMode, ...]:
    if isinstance(modes, (str, ProfileMode)):
        raise ConfigError("modes: expected a list of ProfileMode, e.g. [ProfileMode.DEVICE], not a single value")
    parsed: list[ProfileMode] = []
    for mode in modes:
        parsed_mode = _parse_mode(mode)
        if parsed_mode not in parsed:
            parsed.append(parsed_mode)
    if not parsed:
        raise ConfigError(f"modes: empty; give at least one of {_mode_names()}")
    return tuple(parsed)


def _parse_mode(mode: object) -> ProfileMode:
    if isinstance(mode, ProfileMode):
        return mode
    if isinstance(mode, str) and mode.upper() in ProfileMode.__members__:
        return ProfileMode[mode.upper()]
    raise ConfigError(f"modes: unknown mode {mode!r}; accepted: {_mode_names()}")


def _mode_names() -> str:
    return ", ".join(f"ProfileMode.{m.name}" for m in ProfileMode)


def parse_device_spec(spec: str | None) -> frozenset[int] | None:
    """Parse ``"0,1,2-5"`` into device indices; None (or "") means every device."""
    if spec is None or spec.strip() == "":
        return None
    if not isinstance(spec, str):
        raise ConfigError(f'capture_enabled_for_devices: expected a string like "0,1,2-5", got {spec!r}')
    devices: set[int] = set()
    for part in spec.split(","):
        devices.update(_parse_range(spec, part.strip()))
    return frozenset(devices)


def _parse_range(spec: str, part: str) -> Sequence[int]:
    match = _RANGE_RE.match(part)
    hint = 'comma-separated indices and ascending ranges, e.g. "0,1,2-5"'
    if match is None:
        raise ConfigError(f"capture_enabled_for_devices: {spec!r}: bad element {part!r}; expected {hint}")
    low = int(match.group(1))
    high = int(match.group(2)) if match.group(2) is not None else low
    if high < low:
        raise ConfigError(f"capture_enabled_for_devices: {spec!r}: range {part!r} is descending; expected {hint}")
    return range(low, high + 1)


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError(f"{name}: expected a positive integer, got {value!r}")
    return value


def _bool(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{name}: expected True or False, got {value!r}")
    return value

"""What ``kinetoscope run`` captures, carried to the profiled program in ``KINETOSCOPE_*`` variables.

The wrapper (``kinetoscope run``) turns its options into these variables; a launcher that
cannot take a wrapper sets them itself. This module is read at interpreter start inside the
training job, so it uses the standard library only (no torch).

Steps are counted from 0 at step boundaries (by default the end of each optimizer step):
step N is the work between boundary N and boundary N+1, so step 0, the first iteration, is
never recorded. ``steps="10-15"`` records steps 10 to 15 after one warm-up step;
``wait/warmup/active/repeat/skip_first`` follow ``torch.profiler.schedule`` instead.
"""

from __future__ import annotations

import os
import re
import signal
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from kinetoscope._errors import ConfigError

ENABLE_ENV = "KINETOSCOPE_RUN"
STEPS_ENV = "KINETOSCOPE_STEPS"
SCHEDULE_ENV = {
    "skip_first": "KINETOSCOPE_SKIP_FIRST",
    "wait": "KINETOSCOPE_WAIT",
    "warmup": "KINETOSCOPE_WARMUP",
    "active": "KINETOSCOPE_ACTIVE",
    "repeat": "KINETOSCOPE_REPEAT",
}
MODES_ENV = "KINETOSCOPE_MODES"
OUT_ENV = "KINETOSCOPE_OUT"
STEP_FN_ENV = "KINETOSCOPE_STEP_FN"
FLAG_ENV = {
    "with_stack": "KINETOSCOPE_WITH_STACK",
    "record_shapes": "KINETOSCOPE_RECORD_SHAPES",
    "memory": "KINETOSCOPE_MEMORY",
    "on_demand": "KINETOSCOPE_ON_DEMAND",
    "flight_recorder": "KINETOSCOPE_FLIGHT_RECORDER",
}
DUMP_SIGNAL_ENV = "KINETOSCOPE_DUMP_SIGNAL"
FLIGHT_MAX_ENTRIES_ENV = "KINETOSCOPE_FLIGHT_MAX_ENTRIES"
DEFAULT_DUMP_SIGNAL = "SIGUSR2"
DEFAULT_FLIGHT_MAX_ENTRIES = 100_000  # capture.memory.history's DEFAULT_MAX_ENTRIES, without importing torch
DEFAULT_STEPS = "5-7"
DEFAULT_OUT = "./profile_output"
DEFAULT_MODES = ("DEVICE", "RUNTIME")
MODE_NAMES = ("DEVICE", "RUNTIME", "CPU_UTIL", "HOST_MEMORY")

_STEPS_RE = re.compile(r"^(\d+)(?:-(\d+))?$")
_STEP_FN_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


@dataclass(frozen=True)
class Schedule:
    """``torch.profiler.schedule``'s arguments; ``repeat=0`` repeats until the program ends."""

    skip_first: int = 0
    wait: int = 0
    warmup: int = 1
    active: int = 3
    repeat: int = 1

    @property
    def end_step(self) -> int | None:
        """The first step after the last recorded one, or None when it repeats forever."""
        if self.repeat == 0:
            return None
        return self.skip_first + self.repeat * (self.wait + self.warmup + self.active)

    @property
    def first_step(self) -> int:
        """The first step the profiler is needed for (warm-up or recording)."""
        return self.skip_first + self.wait

    @property
    def first_recorded_step(self) -> int:
        return self.skip_first + self.wait + self.warmup


@dataclass(frozen=True)
class RunSettings:
    schedule: Schedule | None = field(default_factory=Schedule)  # None: on demand only
    modes: tuple[str, ...] = DEFAULT_MODES
    out: Path = Path(DEFAULT_OUT)
    with_stack: bool = False
    record_shapes: bool = False
    memory: bool = False
    on_demand: bool = False
    step_fn: str | None = None
    flight_recorder: bool = False
    dump_signal: str = DEFAULT_DUMP_SIGNAL
    flight_max_entries: int = DEFAULT_FLIGHT_MAX_ENTRIES

    def to_env(self) -> dict[str, str]:
        """The variables that give a program these settings under ``kinetoscope run``'s injection."""
        env = {ENABLE_ENV: "1", MODES_ENV: ",".join(self.modes), OUT_ENV: str(self.out)}
        for name, variable in SCHEDULE_ENV.items():
            if self.schedule is not None:
                env[variable] = str(getattr(self.schedule, name))
        for name, variable in FLAG_ENV.items():
            env[variable] = "1" if getattr(self, name) else "0"
        if self.step_fn:
            env[STEP_FN_ENV] = self.step_fn
        if self.flight_recorder:
            env[DUMP_SIGNAL_ENV], env[FLIGHT_MAX_ENTRIES_ENV] = self.dump_signal, str(self.flight_max_entries)
        return env


def enabled(environ: Mapping[str, str] = os.environ) -> bool:
    variables = (ENABLE_ENV, FLAG_ENV["flight_recorder"])
    return any(_flag(variable, environ.get(variable, "")) for variable in variables)


def from_env(environ: Mapping[str, str] = os.environ) -> RunSettings:
    """Read the ``KINETOSCOPE_*`` variables; raise ``ConfigError`` naming the variable that is wrong."""
    steps = environ.get(STEPS_ENV, "").strip() or None
    given = {name: environ[variable] for name, variable in SCHEDULE_ENV.items() if environ.get(variable, "").strip()}
    counts = {name: _count(SCHEDULE_ENV[name], text) for name, text in given.items()}
    flags = {name: _flag(variable, environ.get(variable, "")) for name, variable in FLAG_ENV.items()}
    on_demand_only = (flags["on_demand"] or flags["flight_recorder"]) and steps is None and not counts
    schedule = None if on_demand_only else schedule_from(steps, counts)
    step_fn = parse_step_fn(environ.get(STEP_FN_ENV, "").strip() or None)
    return RunSettings(
        schedule=schedule,
        modes=parse_mode_names(environ.get(MODES_ENV, "")),
        out=Path(environ.get(OUT_ENV, "").strip() or DEFAULT_OUT),
        step_fn=step_fn,
        dump_signal=parse_dump_signal(environ.get(DUMP_SIGNAL_ENV, "").strip() or DEFAULT_DUMP_SIGNAL).name,
        flight_max_entries=_positive(FLIGHT_MAX_ENTRIES_ENV, environ.get(FLIGHT_MAX_ENTRIES_ENV, "").strip()),
        **flags,
    )


def schedule_from(steps: str | None, counts: Mapping[str, int]) -> Schedule:
    """A ``--steps A-B`` range, or the schedule counts given (the rest defaulted); not both."""
    negative = sorted(name for name, value in counts.items() if value < 0)
    if negative:
        option = "--" + negative[0].replace("_", "-")
        raise ConfigError(f"{SCHEDULE_ENV[negative[0]]} ({option}): expected a whole number >= 0")
    if steps is not None and counts:
        raise ConfigError(f"{STEPS_ENV} (--steps) and {', '.join(sorted(counts))} are exclusive; give one or the other")
    if steps is None:
        schedule = Schedule(**counts) if counts else steps_schedule(DEFAULT_STEPS)
        if schedule.active < 1:
            raise ConfigError(f"{SCHEDULE_ENV['active']} (--active): expected at least 1, got {schedule.active}")
        return schedule
    return steps_schedule(steps)


def steps_schedule(steps: str) -> Schedule:
    """``"10-15"`` (or ``"10"``): record those steps after one warm-up step (none before step 2)."""
    match = _STEPS_RE.match(steps.strip())
    if match is None:
        raise ConfigError(f"{STEPS_ENV} (--steps): {steps!r}: expected FIRST-LAST step numbers, e.g. 10-15")
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) is not None else first
    if first < 1 or last < first:
        raise ConfigError(
            f"{STEPS_ENV} (--steps): {steps!r}: expected 1 <= FIRST <= LAST; step 0 (the first iteration, "
            "before the first step boundary) cannot be recorded"
        )
    warmup = 1 if first >= 2 else 0
    return Schedule(skip_first=first - warmup, wait=0, warmup=warmup, active=last - first + 1, repeat=1)


def parse_step_fn(text: str | None) -> str | None:
    """``"module:function"`` (or ``module:Class.method``), checked; None stays None."""
    if text is not None and not _STEP_FN_RE.match(text):
        raise ConfigError(f"{STEP_FN_ENV} (--step-fn): {text!r}: expected module:function, e.g. train:train_step")
    return text


def parse_mode_names(text: str) -> tuple[str, ...]:
    """``"DEVICE,RUNTIME"`` -> mode names, checked without importing torch."""
    names = [part.strip().upper() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in MODE_NAMES]
    if unknown:
        raise ConfigError(f"{MODES_ENV} (--modes): unknown mode {unknown[0]!r}; accepted: {', '.join(MODE_NAMES)}")
    return tuple(dict.fromkeys(names)) or DEFAULT_MODES


def parse_dump_signal(name: str | int) -> signal.Signals:
    """``"SIGUSR2"``, ``"USR2"`` or ``12`` -> the signal, checked."""
    text = str(name).strip().upper()
    try:
        if text.isdigit():
            return signal.Signals(int(text))
        return signal.Signals[text if text.startswith("SIG") else "SIG" + text]
    except (KeyError, ValueError):
        raise ConfigError(f"{DUMP_SIGNAL_ENV} (--dump-signal): unknown signal {name!r}; e.g. SIGUSR2 or 12") from None


def _positive(variable: str, text: str) -> int:
    if not text:
        return DEFAULT_FLIGHT_MAX_ENTRIES
    if not text.isdigit() or int(text) < 1:
        raise ConfigError(f"{variable}: expected a whole number >= 1, got {text!r}")
    return int(text)


def _count(variable: str, text: str) -> int:
    if not text.strip().isdigit():
        raise ConfigError(f"{variable}: expected a whole number >= 0, got {text!r}")
    return int(text)


def _flag(variable: str, text: str) -> bool:
    value = text.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{variable}: expected 1 or 0, got {text!r}")

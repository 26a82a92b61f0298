"""kinetoscope: profile capture and explorer for PyTorch.

The capture API (``ProfileConfig``, ``ProfileMode``, ``Profiler``, ``activities``,
``synchronize``, ``on_demand``, and the ``memory`` and ``neuron`` modules) and the explorer's ``open(path)``
(a dataset's tables as Arrow, SQL, and the summary, findings and diff of the commands) are imported
lazily so that ``import kinetoscope`` stays cheap inside training jobs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kinetoscope._errors import (
    CommandError,
    ConfigError,
    FormatError,
    KinetoscopeError,
    SessionError,
)
from kinetoscope._version import __version__

if TYPE_CHECKING:
    from kinetoscope.capture.profiling.config import ProfileConfig, ProfileMode
    from kinetoscope.capture.profiling.environment import activities, synchronize
    from kinetoscope.capture.profiling.profiler import Profiler
    from kinetoscope.capture.running.autorun import on_demand
    from kinetoscope.capture.running.flight_recorder import flight_recorder
    from kinetoscope.notebook.profile import open_profile as open

__all__ = [
    "CommandError",
    "ConfigError",
    "FormatError",
    "KinetoscopeError",
    "ProfileConfig",
    "ProfileMode",
    "Profiler",
    "SessionError",
    "__version__",
    "activities",
    "flight_recorder",
    "on_demand",
    "open",
    "synchronize",
]

# name -> (module, attribute) for names not defined under the same name in their module.
_RENAMED = {"open": ("kinetoscope.notebook.profile", "open_profile")}
_LAZY = {
    "ProfileConfig": "kinetoscope.capture.profiling.config",
    "ProfileMode": "kinetoscope.capture.profiling.config",
    "Profiler": "kinetoscope.capture.profiling.profiler",
    "activities": "kinetoscope.capture.profiling.environment",
    "flight_recorder": "kinetoscope.capture.running.flight_recorder",
    "on_demand": "kinetoscope.capture.running.autorun",
    "synchronize": "kinetoscope.capture.profiling.environment",
}


# Submodules reachable as attributes (``kinetoscope.memory.record_memory_history``).
_SUBMODULES = ("memory", "neuron")


def __getattr__(name: str) -> Any:
    import importlib

    if name in _SUBMODULES:
        return importlib.import_module(f"kinetoscope.{name}")
    module_name, attribute = _RENAMED.get(name, (_LAZY.get(name), name))
    if module_name is None:
        raise AttributeError(f"module 'kinetoscope' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), attribute)
    globals()[name] = value
    return value

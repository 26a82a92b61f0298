"""Compatibility with torch-neuronx's profiling API: its names, mapped onto kinetoscope.

Code written for ``torch_neuronx.profiling`` runs after changing its import lines and its
device and process-group choice (see docs/compatibility.md and ``examples/``)::

    import kinetoscope.neuron as torch_neuronx
    from kinetoscope.neuron import NeuronConfig, ProfileMode, NeuronProfiler
    from kinetoscope.neuron import memory as mem

- ``NeuronConfig`` takes the seed's parameter names (``modes``, ``max_events_per_nc``,
  ``capture_enabled_for_nc``, ``profile_output_dir``, ``neff_cache_dir``,
  ``precache_node_info``) and is a ``kinetoscope.ProfileConfig``; ``neff_cache_dir``
  defaults to ``$TORCH_NEURONX_NEFF_CACHE_DIR`` and means kinetoscope's
  ``artifact_cache_dir`` (torch.compile's generated kernels).
- ``NeuronProfiler`` is ``kinetoscope.Profiler``.
- ``synchronize()``, ``Stream``, ``stream(...)`` and ``memory._record_memory_history``
  act on whatever accelerator is present (CUDA) and are harmless on CPU.
"""

from __future__ import annotations

import os
from pathlib import Path

from kinetoscope.capture.profiling.config import DEFAULT_MAX_EVENTS_PER_DEVICE, ProfileConfig, ProfileMode
from kinetoscope.capture.profiling.environment import activities
from kinetoscope.capture.profiling.profiler import Profiler
from kinetoscope.neuron import memory
from kinetoscope.neuron.streams import Stream, stream, synchronize

# The seed's variable, read in the training process when a config is made (a capture-side setting,
# as ``ProfileConfig`` reads KINETOSCOPE_ARTIFACT_CACHE_DIR): docs/compatibility.md.
NEFF_CACHE_ENV = "TORCH_NEURONX_NEFF_CACHE_DIR"

__all__ = [
    "NeuronConfig",
    "NeuronProfiler",
    "ProfileMode",
    "Stream",
    "activities",
    "memory",
    "stream",
    "synchronize",
]


class NeuronConfig(ProfileConfig):
    """``ProfileConfig`` under the seed's parameter names (all keyword-only, all optional)."""

    def __init__(
        self,
        *,
        modes: list[ProfileMode | str] | None = None,
        max_events_per_nc: int = DEFAULT_MAX_EVENTS_PER_DEVICE,
        capture_enabled_for_nc: str | None = None,
        profile_output_dir: str | os.PathLike[str] = "./profile_output",
        neff_cache_dir: str | os.PathLike[str] | None = None,
        precache_node_info: bool = True,
    ) -> None:
        cache_dir = neff_cache_dir if neff_cache_dir is not None else os.environ.get(NEFF_CACHE_ENV) or None
        super().__init__(
            modes=modes,
            profile_output_dir=profile_output_dir,
            max_events_per_device=max_events_per_nc,
            capture_enabled_for_devices=capture_enabled_for_nc,
            artifact_cache_dir=cache_dir,
            precache=precache_node_info,
        )

    @property
    def max_events_per_nc(self) -> int:
        return self.max_events_per_device

    @property
    def capture_enabled_for_nc(self) -> str | None:
        return self.capture_enabled_for_devices

    @property
    def neff_cache_dir(self) -> Path | None:
        return self.artifact_cache_dir

    @property
    def precache_node_info(self) -> bool:
        return self.precache


class NeuronProfiler(Profiler):
    """``kinetoscope.Profiler``: ``export_trace`` as ``on_trace_ready``, then ``export_snapshot``."""

"""The seed's API names over kinetoscope: config names, streams, synchronize, memory history."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import kinetoscope
import kinetoscope.neuron as torch_neuronx
from kinetoscope import ProfileConfig, Profiler
from kinetoscope.neuron import NeuronConfig, NeuronProfiler, ProfileMode
from kinetoscope.neuron import memory as mem

from ..conftest import requires_cxx


def test_neuron_config_maps_every_seed_parameter(tmp_path: Path) -> None:
    config = NeuronConfig(
        modes=[ProfileMode.DEVICE, ProfileMode.RUNTIME, ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY],
        profile_output_dir=tmp_path, max_events_per_nc=100000, capture_enabled_for_nc="0,1",
        neff_cache_dir=tmp_path / "cache", precache_node_info=False,
    )
    assert isinstance(config, ProfileConfig) and isinstance(config, torch._C._profiler._ExperimentalConfig)
    assert config.modes == tuple(ProfileMode) and config.profile_output_dir == tmp_path
    assert (config.max_events_per_device, config.max_events_per_nc) == (100000, 100000)
    assert config.capture_enabled_for_devices == config.capture_enabled_for_nc == "0,1"
    assert config.device_enabled(1) and not config.device_enabled(2)
    assert config.artifact_cache_dir == config.neff_cache_dir == tmp_path / "cache"
    assert config.precache is config.precache_node_info is False


def test_neuron_defaults_match_the_seed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(torch_neuronx.NEFF_CACHE_ENV, raising=False)
    config = NeuronConfig()
    assert config.modes == (ProfileMode.DEVICE, ProfileMode.RUNTIME)
    assert config.precache_node_info is True and config.neff_cache_dir is None
    monkeypatch.setenv(torch_neuronx.NEFF_CACHE_ENV, "/tmp/neff-cache")
    assert NeuronConfig().neff_cache_dir == Path("/tmp/neff-cache")
    assert ProfileMode is kinetoscope.ProfileMode


def test_neuron_profiler_is_the_kinetoscope_exporter(tmp_path: Path) -> None:
    exporter = NeuronProfiler(NeuronConfig(profile_output_dir=tmp_path))
    assert isinstance(exporter, Profiler)
    assert callable(exporter.export_trace) and callable(exporter.export_snapshot)


class FakeWork:
    def __init__(self, log: list[str], name: str) -> None:
        self.log, self.name = log, name

    def wait(self) -> bool:
        self.log.append(self.name)
        return True


def test_cpu_stream_keeps_tracked_work_in_order_and_synchronize_waits() -> None:
    log: list[str] = []
    side = torch_neuronx.Stream(torch.device("cpu"))
    assert side.native is None
    with torch_neuronx.stream(side) as inside:
        assert inside is side
        side.track(FakeWork(log, "first"))
        side.track(FakeWork(log, "second"))  # a stream runs in order: the first is waited for
    assert log == ["first"]
    torch_neuronx.synchronize()
    assert log == ["first", "second"]
    torch_neuronx.synchronize()  # nothing left to wait for
    assert log == ["first", "second"]


def test_stream_of_none_is_a_no_op() -> None:
    with torch_neuronx.stream(None) as inside:
        assert inside is None


@requires_cxx
def test_record_memory_history_starts_and_stops() -> None:
    try:
        mem._record_memory_history()
        recording = kinetoscope.memory.current()
        assert recording is not None and recording.stacks == "python"
        mem._record_memory_history(context=None, max_entries=50)
        recording = kinetoscope.memory.current()
        assert recording is not None and recording.stacks == "none" and recording.max_entries == 50
    finally:
        mem._record_memory_history(enabled=False)
    assert not kinetoscope.memory.is_recording()
    mem._record_memory_history(enabled=None)  # stopping twice is harmless

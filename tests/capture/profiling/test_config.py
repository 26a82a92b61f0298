from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from kinetoscope import ConfigError, ProfileConfig, ProfileMode
from kinetoscope.capture.profiling.config import DEFAULT_MAX_EVENTS_PER_DEVICE, parse_device_spec


def test_defaults_follow_the_seed() -> None:
    config = ProfileConfig()
    assert config.modes == (ProfileMode.DEVICE, ProfileMode.RUNTIME)
    assert config.max_events_per_device == DEFAULT_MAX_EVENTS_PER_DEVICE == 1_000_000
    assert config.capture_enabled_for_devices is None
    assert config.precache is True
    assert config.profile_output_dir == Path("profile_output")
    assert config.sample_interval_ms > 0


def test_modes_accept_names_and_drop_duplicates() -> None:
    config = ProfileConfig(modes=["cpu_util", ProfileMode.CPU_UTIL, "HOST_MEMORY"])
    assert config.modes == (ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [("0,1,2-5", {0, 1, 2, 3, 4, 5}), ("3", {3}), (" 1 , 4-4 ", {1, 4}), ("", None), (None, None)],
)
def test_device_spec(spec: str | None, expected: set[int] | None) -> None:
    parsed = parse_device_spec(spec)
    assert (None if parsed is None else set(parsed)) == expected


@pytest.mark.parametrize(
    ("kwargs", "names"),
    [
        ({"modes": []}, "modes"),
        ({"modes": ["GPU"]}, "modes"),
        ({"modes": ProfileMode.DEVICE}, "modes"),
        ({"max_events_per_device": 0}, "max_events_per_device"),
        ({"max_events_per_device": -5}, "max_events_per_device"),
        ({"capture_enabled_for_devices": "3-1"}, "capture_enabled_for_devices"),
        ({"capture_enabled_for_devices": "0,,2"}, "capture_enabled_for_devices"),
        ({"capture_enabled_for_devices": "a"}, "capture_enabled_for_devices"),
        ({"sample_interval_ms": -1}, "sample_interval_ms"),
        ({"sample_interval_ms": 0}, "sample_interval_ms"),
        ({"precache": "yes"}, "precache"),
    ],
)
def test_invalid_values_name_the_parameter(kwargs: dict[str, object], names: str) -> None:
    with pytest.raises(ConfigError) as excinfo:
        ProfileConfig(**kwargs)  # type: ignore[arg-type]
    assert str(excinfo.value).startswith(names)


def test_descending_range_message_shows_accepted_form() -> None:
    with pytest.raises(ConfigError, match=r'e\.g\. "0,1,2-5"'):
        ProfileConfig(capture_enabled_for_devices="3-1")


def test_config_is_immutable() -> None:
    config = ProfileConfig()
    with pytest.raises(AttributeError):
        config.max_events_per_device = 5  # type: ignore[misc]
    with pytest.raises(AttributeError):
        config.anything = 1
    assert copy.copy(config) is config


def test_artifact_cache_dir_from_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("KINETOSCOPE_ARTIFACT_CACHE_DIR", str(tmp_path))
    assert ProfileConfig().artifact_cache_dir == tmp_path
    assert ProfileConfig(artifact_cache_dir="x").artifact_cache_dir == Path("x")


def test_torch_accepts_the_config_unchanged(tmp_path: Path) -> None:
    config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=tmp_path)
    with profile(activities=[ProfilerActivity.CPU], experimental_config=config) as prof:
        torch.ones(4).sum()
    assert prof.experimental_config is config
    assert any(e.key == "aten::sum" for e in prof.key_averages())


def test_repr_lists_every_field() -> None:
    text = repr(ProfileConfig(capture_enabled_for_devices="0-1"))
    for field in (
        "modes",
        "profile_output_dir",
        "max_events_per_device",
        "capture_enabled_for_devices",
        "artifact_cache_dir",
        "precache",
        "sample_interval_ms",
    ):
        assert field in text

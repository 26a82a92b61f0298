"""Small real workloads and checks shared by the capture tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch.profiler import profile

import kinetoscope
from kinetoscope import ProfileConfig, ProfileMode, Profiler
from kinetoscope.format.files import sha256_of
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti


def tiny_model() -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    return model, torch.randn(16, 64)


def check_complete_session(path: Path) -> Any:
    """Assert a session is sealed: COMPLETE, and its manifest matches the files on disk."""
    info = ti.read_trace_info(path)
    assert ti.state_name(info.state) == "COMPLETE", info.error
    on_disk = sorted(
        p.relative_to(path).as_posix() for p in path.rglob("*") if p.is_file() and p.name != layout.TRACE_INFO
    )
    assert [f.name for f in info.files] == on_disk
    for entry in info.files:
        assert (path / entry.name).stat().st_size == entry.size_bytes
        assert sha256_of(path / entry.name) == entry.sha256
    return info


def load_trace(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads((path / layout.TRACE_JSON).read_text())
    return document


def runtime_profile(out: Path, **options: Any) -> Any:
    """A ``torch.profiler.profile`` exporting a RUNTIME session under ``out`` (``options`` go to profile)."""
    config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=out)
    exporter = Profiler(config)
    return profile(
        activities=kinetoscope.activities(), experimental_config=config, on_trace_ready=exporter.export_trace, **options
    )

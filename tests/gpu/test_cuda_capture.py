"""On a CUDA device: caching-allocator snapshots and Triton kernels in the session."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.profiler import profile

import kinetoscope
from kinetoscope import ProfileConfig, ProfileMode, Profiler
from kinetoscope.capture import snapshots
from kinetoscope.format.session_files import kernel_index
from kinetoscope.format.session_files.snapshot import load_snapshot

from ..capture.helpers import check_complete_session, load_trace

pytestmark = pytest.mark.gpu


def test_cuda_memory_snapshot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(snapshots, "_latest_session", None)
    kinetoscope.memory.record_memory_history(max_entries=10_000)
    try:
        config = ProfileConfig(modes=[ProfileMode.DEVICE, ProfileMode.RUNTIME], profile_output_dir=tmp_path)
        exporter = Profiler(config)
        with profile(activities=kinetoscope.activities(), experimental_config=config,
                     on_trace_ready=exporter.export_trace, profile_memory=True):
            x = torch.randn(1024, 1024, device="cuda")
            y = x @ x
            kinetoscope.synchronize()
        path = exporter.export_snapshot()
    finally:
        kinetoscope.memory.record_memory_history(enabled=False)
    (entry,) = check_complete_session(exporter.sessions[0]).memory_snapshots
    assert (entry.device_kind, entry.source) == ("cuda", "cuda-caching-allocator")
    snapshot = load_snapshot(path)
    allocs = [e for trace in snapshot["device_traces"] for e in trace if e["action"] == "alloc"]
    assert any(e["size"] >= y.numel() * 4 for e in allocs)
    assert entry.recording_start_clocks.realtime_ns // 1000 <= min(e["time_us"] for e in allocs)


def test_triton_kernels_are_copied(tmp_path: Path) -> None:
    config = ProfileConfig(modes=[ProfileMode.DEVICE, ProfileMode.RUNTIME], profile_output_dir=tmp_path,
                           artifact_cache_dir=tmp_path / "cache")
    exporter = Profiler(config)
    fn = torch.compile(lambda a: torch.relu(a) * 2 + 1)
    x = torch.randn(4096, device="cuda")
    for _ in range(3):
        fn(x)
    with profile(activities=kinetoscope.activities(), experimental_config=config,
                 on_trace_ready=exporter.export_trace):
        fn(x)
        kinetoscope.synchronize()
    session = exporter.sessions[0]
    out = check_complete_session(session).compiled_kernels
    assert out.graphs >= 1 and out.kernels >= 1
    index = kernel_index.read_index(session / out.index)
    names = {e.get("name") for e in load_trace(session)["traceEvents"]}
    triton = [n for n, entries in index["trace_names"].items() if entries[0]["kind"] == "triton"]
    assert triton and any(n in names for n in triton)

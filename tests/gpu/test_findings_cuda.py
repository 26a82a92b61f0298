"""On a CUDA device: the GPU rules on runs that do what they detect (skipped without one)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch.profiler import profile, schedule

import kinetoscope
from kinetoscope import ProfileConfig, ProfileMode, Profiler
from kinetoscope.findings import NEEDED_COLUMNS, run_rules
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

pytestmark = [pytest.mark.gpu, pytest.mark.filterwarnings("ignore:Profiler won.t be using warmup")]
STEPS = 3


def capture(tmp_path: Path, step: Callable[[], object]) -> dict[str, Any]:
    config = ProfileConfig(modes=[ProfileMode.DEVICE, ProfileMode.RUNTIME], profile_output_dir=tmp_path / "prof")
    exporter = Profiler(config)
    for _ in range(2):
        step()  # warm-up: the caching allocator and cuBLAS are ready before the window
    torch.cuda.synchronize()
    with profile(
        activities=kinetoscope.activities(),
        schedule=schedule(wait=0, warmup=0, active=STEPS, repeat=1),
        experimental_config=config,
        on_trace_ready=exporter.export_trace,
    ) as prof:
        for _ in range(STEPS):
            step()
            prof.step()
        torch.cuda.synchronize()
    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")).status == "ok"
    with open_dataset(tmp_path / "ds") as ds:
        return ds.load(NEEDED_COLUMNS)


def rules_found(tmp_path: Path, step: Callable[[], object]) -> dict[str, Any]:
    return {f.rule: f for f in run_rules(capture(tmp_path, step))}


def test_unpinned_copies_and_item_are_found(tmp_path: Path) -> None:
    host = torch.randn(1 << 20)  # pageable: not pinned
    weight = torch.randn(1024, device="cuda")

    def step() -> None:
        x = host.to("cuda")
        for _ in range(4):
            (x[:1024] * weight).sum().item()

    found = rules_found(tmp_path, step)
    assert found["pageable_copy"].seen["copies"] >= STEPS
    sync = found["sync_in_step"]
    assert sync.seen["calls"] >= 4 * STEPS
    assert "aten::_local_scalar_dense" in {c["name"] for c in sync.seen["caused_by_op"]}


def test_a_loop_of_tiny_kernels_is_launch_bound(tmp_path: Path) -> None:
    x = torch.randn(256, device="cuda")

    def step() -> None:
        y = x
        for _ in range(300):
            y = y * 1.0001

    launch = rules_found(tmp_path, step)["launch_bound"]
    assert launch.seen["kernels_per_step"] >= 300 and launch.seen["short_kernel_pct"] > 90

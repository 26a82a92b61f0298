"""The built-in demo workload: a small MLP trained for a few steps under the profiler."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import torch
from torch.profiler import profile, record_function, schedule

from kinetoscope.capture.profiling.config import ProfileConfig, ProfileMode
from kinetoscope.capture.profiling.environment import activities, synchronize
from kinetoscope.capture.profiling.profiler import Profiler

ALL_MODES = (ProfileMode.DEVICE, ProfileMode.RUNTIME, ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY)


@dataclass(frozen=True)
class DemoResult:
    sessions: list[Path]
    top_ops: list[tuple[str, float]]  # (op name, self CPU time in microseconds)


def build_model(device: torch.device) -> tuple[torch.nn.Module, torch.optim.Optimizer]:
    model = torch.nn.Sequential(
        torch.nn.Linear(512, 1024),
        torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024),
        torch.nn.ReLU(),
        torch.nn.Linear(1024, 10),
    ).to(device)
    return model, torch.optim.SGD(model.parameters(), lr=0.01)


def train_step(model: torch.nn.Module, optimizer: torch.optim.Optimizer, x: torch.Tensor, y: torch.Tensor) -> None:
    with record_function("forward"):
        loss = torch.nn.functional.cross_entropy(model(x), y)
    with record_function("backward"):
        optimizer.zero_grad(set_to_none=True)
        loss.backward()  # type: ignore[no-untyped-call]
    with record_function("optimizer"):
        optimizer.step()


def run_demo(output_dir: Path, steps: int = 4, warmup: int = 3) -> DemoResult:
    """Warm up, then profile ``steps`` training steps with all four modes into ``output_dir``."""
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    model, optimizer = build_model(device)
    x = torch.randn(64, 512, device=device)
    y = torch.randint(0, 10, (64,), device=device)
    config = ProfileConfig(modes=list(ALL_MODES), profile_output_dir=output_dir)
    exporter = Profiler(config)
    for _ in range(warmup):
        train_step(model, optimizer, x, y)
    synchronize()
    with profile(
        activities=activities(),
        schedule=schedule(wait=0, warmup=1, active=steps, repeat=1),
        experimental_config=config,
        on_trace_ready=exporter.export_trace,
        record_shapes=True,
        profile_memory=True,
        with_stack=True,
    ) as prof:
        for _ in range(steps + 1):
            train_step(model, optimizer, x, y)
            synchronize()
            prof.step()
    averages = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    top = [(e.key, float(e.self_cpu_time_total)) for e in averages[:5]]
    return DemoResult(sessions=list(exporter.sessions), top_ops=top)

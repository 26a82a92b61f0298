"""A real torch.profiler trace with Python stacks, recorded here on the CPU: the second input of
``peers_speed.py`` (no public trace of 50-100 MB has ``with_stack`` frames).

A 12-layer MLP (256 wide, batch 64) trained with SGD for STEPS steps under
``torch.profiler.profile(activities=[CPU], with_stack=True, record_shapes=True)``, each step in a
``ProfilerStep#N`` annotation as torch.profiler's schedule writes it; the trace is exported with
``export_chrome_trace`` and gzipped. 260 steps make about 59 MB of JSON (4.2 MB gzipped), with
about 77,000 ``python_function`` events.

  .venv/bin/python benchmarks/stack_trace.py 260 /tmp/stacks/trace.json.gz
"""

from __future__ import annotations

import gzip
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

WIDTH, LAYERS, BATCH = 256, 12, 64


def record(steps: int, out: Path) -> None:
    """Train for ``steps`` steps under the profiler and write the gzipped trace to ``out``."""
    torch.manual_seed(0)
    layers = [m for _ in range(LAYERS // 2) for m in (torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU())]
    model = torch.nn.Sequential(*layers)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    batch = torch.randn(BATCH, WIDTH)
    with profile(activities=[ProfilerActivity.CPU], with_stack=True, record_shapes=True) as prof:
        for step in range(steps):
            with record_function(f"ProfilerStep#{step}"):
                optimizer.zero_grad()
                model(batch).square().mean().backward()
                optimizer.step()
    with tempfile.TemporaryDirectory() as scratch:
        plain = Path(scratch) / "trace.json"
        prof.export_chrome_trace(str(plain))
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(plain, "rb") as source, gzip.open(out, "wb", compresslevel=6) as target:
            shutil.copyfileobj(source, target)


if __name__ == "__main__":
    record(int(sys.argv[1]), Path(sys.argv[2]))

"""Writes the fuzz suite's seed session: a real torch.profiler capture of a tiny model on CPU with
every mode, Python stacks, shapes, memory events and a memory snapshot, kept small (~100 KB).

    PYTHONPATH=src python -m tests.fuzz.make_seeds tests/data/fuzz-seed

The files it writes are committed (``tests/data/fuzz-seed``) so the suite reads the same seeds
every run; rerun this after a format change and commit the result.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

import torch
from torch.profiler import profile

import kinetoscope
from kinetoscope import ProfileConfig, ProfileMode, Profiler
from kinetoscope.format.session_files import session_dir as layout


def capture(out: Path) -> Path:
    """One session under ``out``; returns its directory."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    x = torch.randn(8, 16)
    modes = [ProfileMode.RUNTIME, ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY]
    config = ProfileConfig(modes=modes, profile_output_dir=out)
    exporter = Profiler(config)
    kinetoscope.memory.record_memory_history(max_entries=2000)
    with profile(activities=kinetoscope.activities(), experimental_config=config, on_trace_ready=exporter.export_trace,
                 record_shapes=True, with_stack=True, profile_memory=True):  # fmt: skip
        for _ in range(2):
            model(x).sum().backward()
    exporter.export_snapshot()
    kinetoscope.memory.record_memory_history(enabled=False)
    (session,) = layout.find_sessions(out)
    return session


def main(argv: list[str]) -> int:
    target = Path(argv[0])
    with tempfile.TemporaryDirectory() as tmp:
        session = capture(Path(tmp))
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(session, target)
    for path in sorted(target.iterdir()):
        print(f"{path.stat().st_size:>9} {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

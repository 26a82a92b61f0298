"""A two-rank gloo training job on the CPU, profiled with torch.profiler: every rank writes
``rank<R>.pt.trace.json`` (``ProfilerStep#N`` marks, one gradient ``all_reduce`` a step) into the
output folder. The fixture of ``tests/data/gloo-steps`` and of the collective-delay injection of
``benchmarks/diff_accuracy.py``.

    python -m torch.distributed.run --standalone --nproc_per_node=2 benchmarks/gloo_steps_capture.py OUT [STEPS]
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch.profiler import ProfilerActivity, profile, schedule

WIDTH = 256
BATCH = 64


def main() -> None:
    out = Path(sys.argv[1])
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 8
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(WIDTH, 4 * WIDTH), torch.nn.ReLU(), torch.nn.Linear(4 * WIDTH, WIDTH))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    flat = torch.zeros(sum(p.numel() for p in model.parameters()))
    x = torch.randn(BATCH, WIDTH)
    out.mkdir(parents=True, exist_ok=True)
    dist.barrier()
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 schedule=schedule(wait=1, warmup=1, active=steps, repeat=1),
                 on_trace_ready=lambda p: p.export_chrome_trace(str(out / f"rank{rank}.pt.trace.json"))) as prof:
        for _ in range(steps + 2):  # a step skipped and a warm-up step, then the recorded ones
            optimizer.zero_grad()
            model(x).sum().backward()
            torch.cat([p.grad.reshape(-1) for p in model.parameters()], out=flat)
            dist.all_reduce(flat)  # one collective a step: the gradients averaged over the ranks
            offset = 0
            for p in model.parameters():
                p.grad.copy_(flat[offset:offset + p.numel()].view_as(p) / dist.get_world_size())
                offset += p.numel()
            optimizer.step()
            prof.step()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

"""The seed's multi-rank example (host collective on a side stream), ported to kinetoscope.

Changes from the original, and why (see docs/compatibility.md):
- imports: ``kinetoscope.neuron`` stands in for ``torch_neuronx`` and its profiling module;
- device and backend: CUDA with NCCL where there is a GPU, else the CPU with gloo (the
  original's ``torch.device("neuron")`` and ``backend="neuron"``); on CUDA each rank
  selects its GPU by ``LOCAL_RANK``;
- sizes: 4096x4096 matmuls and a 4M-element all_reduce on an accelerator, 256x256 and 64K
  on a CPU, so the example runs in seconds there;
- the collective is issued with ``async_op=True`` and its handle handed to
  ``cc_stream.track(...)``: on a CPU there are no streams, and an asynchronous collective
  (run by gloo's own threads) is what overlaps the compute; ``synchronize()`` then waits
  for it, as the accelerator's synchronize waits for its streams;
- ``activities``: ``torch_neuronx.activities()`` instead of ``ProfilerActivity.PrivateUse1``;
- the output directory may be given as the first argument.

Launch: ``torchrun --standalone --nproc_per_node 4 examples/multi_rank.py [profile_output_dir]``.
"""

import os
import sys

import torch
import torch.distributed as dist
from torch.profiler import profile, record_function

import kinetoscope.neuron as torch_neuronx
from kinetoscope.neuron import NeuronConfig, NeuronProfiler, ProfileMode


def main():
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if torch.cuda.is_available() else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend="nccl" if device.type == "cuda" else "gloo")
    rank = dist.get_rank()
    cc_stream = torch_neuronx.Stream(device)
    n, t_numel = (4096, 4 * 1024 * 1024) if device.type != "cpu" else (256, 64 * 1024)

    exp_config = NeuronConfig(
        modes=[ProfileMode.DEVICE, ProfileMode.RUNTIME,
               ProfileMode.CPU_UTIL, ProfileMode.HOST_MEMORY],
        profile_output_dir=sys.argv[1] if len(sys.argv) > 1 else "./profile_host_cc",
        max_events_per_nc=100000,
        capture_enabled_for_nc="0,1",
    )
    exporter = NeuronProfiler(exp_config)

    with (
        profile(
            activities=torch_neuronx.activities(),
            experimental_config=exp_config,
            with_stack=True,
            on_trace_ready=exporter.export_trace,
        ) as prof,
        record_function("model_inference"),
    ):
        a = torch.randn(n, n, device=device, dtype=torch.float32)
        b = torch.randn(n, n, device=device, dtype=torch.float32)
        t = torch.randn(t_numel, device=device, dtype=torch.float32)

        # Warmup
        for _ in range(3):
            torch.matmul(a, b)
            with torch_neuronx.stream(cc_stream):
                cc_stream.track(dist.all_reduce(t, async_op=True))
        torch_neuronx.synchronize()
        dist.barrier()

        # Profiled iterations
        for _ in range(10):
            torch.matmul(a, b)
            with torch_neuronx.stream(cc_stream):
                cc_stream.track(dist.all_reduce(t, async_op=True))
        torch_neuronx.synchronize()
        dist.barrier()

    print(f"rank {rank}: {exporter.current_session}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

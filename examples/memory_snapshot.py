"""The seed's multi-rank memory snapshot example, ported to kinetoscope.

The same changes as ``multi_rank.py`` (imports, device and backend, sizes, asynchronous
collective tracked on the side stream, activities, output directory argument), plus:
``from kinetoscope.neuron import memory as mem`` for ``from torch_neuronx import memory as
mem``. On a CPU the history comes from kinetoscope's allocator hook (built once with the
C++ compiler); on CUDA from PyTorch's caching allocator.

Launch: ``torchrun --standalone --nproc_per_node 4 examples/memory_snapshot.py [profile_output_dir]``.
"""

import os
import sys

import torch
import torch.distributed as dist
from torch.profiler import profile, record_function

import kinetoscope.neuron as torch_neuronx
from kinetoscope.neuron import NeuronConfig, NeuronProfiler, ProfileMode
from kinetoscope.neuron import memory as mem


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
        profile_output_dir=sys.argv[1] if len(sys.argv) > 1 else "./profile_memory",
        max_events_per_nc=100000,
        capture_enabled_for_nc="0,1",
    )
    exporter = NeuronProfiler(exp_config)

    # Record caching-allocator history with Python stack traces
    mem._record_memory_history()

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

    # Write this rank's snapshot into its session directory, next to ntrace.pb
    exporter.export_snapshot(f"memory_snapshot_rank{rank}.pickle")
    mem._record_memory_history(enabled=False)

    print(f"rank {rank}: {exporter.current_session}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

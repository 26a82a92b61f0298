"""The seed's basic example, ported to kinetoscope (see docs/compatibility.md).

Changes from the original, and why:
- imports: ``kinetoscope.neuron`` instead of ``torch_neuronx.profiling``;
- ``activities``: ``torch_neuronx.activities()`` (CPU plus the accelerator's own activity,
  CUDA on NVIDIA) instead of ``ProfilerActivity.PrivateUse1``;
- ``torch.neuron.synchronize()`` becomes ``torch_neuronx.synchronize()``;
- the original leaves ``model`` and ``x`` undefined; here they are a small MLP on the
  accelerator when there is one, else the CPU.

Run: ``python examples/basic.py [profile_output_dir]``.
"""

import sys

import torch
from torch.profiler import profile

import kinetoscope.neuron as torch_neuronx
from kinetoscope.neuron import NeuronConfig, NeuronProfiler, ProfileMode

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)).to(device)
x = torch.randn(64, 256, device=device)

# Configure Neuron profiling
neuron_config = NeuronConfig(
    modes=[ProfileMode.DEVICE, ProfileMode.RUNTIME],
    profile_output_dir=sys.argv[1] if len(sys.argv) > 1 else "./profile_output",
)

# NeuronProfiler.export_trace() places the framework trace
# in the same directory as Neuron system traces
exporter = NeuronProfiler(neuron_config)

# IMPORTANT: Warm up first (3+ iterations)
with torch.no_grad():
    for _ in range(3):
        model(x)

# Profile your workload
with profile(
    activities=torch_neuronx.activities(),
    experimental_config=neuron_config,
    on_trace_ready=exporter.export_trace,
) as prof:
    with torch.no_grad():
        model(x)
        torch_neuronx.synchronize()  # Ensures device finishes before export

print(exporter.current_session)

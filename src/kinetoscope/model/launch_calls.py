"""Host calls that launch device work, by name, and what a trace without their work means.

A kernel launch call (``cudaLaunchKernel``, ``cuLaunchKernelEx``, ``hipModuleLaunchKernel``, a
graph launch) queues device work; CUPTI records that work with the call's correlation id. A
trace with launch calls but no device work was recorded without the device activity (a GPU host
profiled with ``activities=[ProfilerActivity.CPU]`` only): what the device did is unknown, so
device analyses and rules cannot judge it (``verify``'s ``no_device_activity``, the findings'
``cannot_judge``).

Device work that starts long after its launch call (more than ``LATE_START_NS`` and
``LATE_START_WINDOW_SHARE`` of the window, as a median over the launches) means deep queueing
or a clock offset between the host's and the device's timestamps; either makes host-device
timings (launch delays, gaps by cause) unreliable (the ``device_starts_late`` finding).
"""

from __future__ import annotations

import re

KERNEL_LAUNCH_PATTERN = (
    r"^(cuda|hip|cu|hipModule|hipExt)(LaunchKernel|LaunchCooperativeKernel|LaunchKernelEx|LaunchKernelExC"
    r"|GraphLaunch|ModuleLaunchKernel|LaunchCooperativeKernelMultiDevice)"
)
_KERNEL_LAUNCH_RE = re.compile(KERNEL_LAUNCH_PATTERN)
LATE_START_NS = 10_000_000  # 10 ms
LATE_START_WINDOW_SHARE = 0.10  # of the window


def is_kernel_launch(name: str) -> bool:
    """Whether a runtime call named ``name`` launches a kernel or replays a graph."""
    return _KERNEL_LAUNCH_RE.match(name) is not None

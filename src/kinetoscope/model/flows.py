"""The kinds of flow between events (the ``flows.kind`` column), named here once.

A flow joins the event that caused another to it: a framework op to the runtime calls it made
(``FRAMEWORK_RUNTIME``), a runtime call to the device work it launched (``RUNTIME_DEVICE``) or the
synchronisation it caused (``RUNTIME_SYNC``), a host call to the device-side call it became
(``RUNTIME_RUNTIME``), an op straight to device work where no runtime call sits between
(``FRAMEWORK_DEVICE``), and a forward op to its backward (``FWD_BWD``). ``ingest`` writes them, the
viewer's walks follow them (a launch first: ``]`` follows the work) and ``/api/meta`` gives them to
the front end.
"""

from __future__ import annotations

FRAMEWORK_RUNTIME = "framework_runtime"
RUNTIME_DEVICE = "runtime_device"
RUNTIME_SYNC = "runtime_sync"
RUNTIME_RUNTIME = "runtime_runtime"
FRAMEWORK_DEVICE = "framework_device"
FWD_BWD = "fwd_bwd"
KINDS = (FRAMEWORK_RUNTIME, RUNTIME_DEVICE, RUNTIME_SYNC, RUNTIME_RUNTIME, FRAMEWORK_DEVICE, FWD_BWD)
LAUNCH = RUNTIME_DEVICE  # the flow from a launch to the work it queued


def recorded_with_stacks(python_frames: int) -> bool:
    """Whether a trace was recorded with Python stacks (``with_stack=True``): it holds Python frames
    (kind ``python``). Without them, no event has a stack of its own to show."""
    return python_frames > 0

"""Host calls that block the host until the device catches up, by name.

The model's ``sync`` kind marks the synchronizations CUPTI records itself (``cuda_sync``:
``Stream Sync``, ``Event Sync``, ``Context Sync``); older traces have only the runtime call.
These names are the calls that wait for the device whatever the trace recorded beside them;
a copy into pageable host memory (``Memcpy DtoH (Device -> Pageable)``) blocks the call that
queued it too, ``cudaMemcpyAsync`` included. A synchronization recorded for a query
(``cudaEventQuery``) does not block.
"""

from __future__ import annotations

SYNC_CALLS = (
    *("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize", "cudaMemcpy", "cudaMemcpy2D"),
    *("hipStreamSynchronize", "hipDeviceSynchronize", "hipEventSynchronize", "hipMemcpy"),
)
# Calls that only ask whether the device is done; CUPTI records a synchronization for them too,
# but they return at once.
QUERY_CALLS = ("cudaEventQuery", "cudaStreamQuery", "hipEventQuery", "hipStreamQuery")
# Device copies whose launching call returns only once they are done (host memory not pinned).
BLOCKING_COPY_MARK = "-> Pageable"


def blocks_host_copy(name: str) -> bool:
    """Whether device work named ``name`` is a copy into pageable memory: its launch call waits for it."""
    return name.startswith("Memcpy") and BLOCKING_COPY_MARK in name

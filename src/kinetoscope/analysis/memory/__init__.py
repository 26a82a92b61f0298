"""Memory: device memory peaks and, from memory snapshots, the peak of live allocations and the
stacks that allocated most (``memory_peaks``); two runs' snapshots compared (``allocation_diff``)."""

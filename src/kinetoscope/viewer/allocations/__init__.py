"""The memory pages: counters from the trace, and the allocator's state replayed from a snapshot."""

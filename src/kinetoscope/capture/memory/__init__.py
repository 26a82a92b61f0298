"""Memory history (PyTorch's on CUDA, the allocator hook on CPU) and the snapshots written from it into a session."""

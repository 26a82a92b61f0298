"""Memory history for memory snapshots (public API).

``record_memory_history()`` starts recording every allocation and free with its Python
stack: on CUDA through PyTorch's caching allocator, on CPU through kinetoscope's allocator
hook. ``Profiler.export_snapshot(name)`` then writes the history into the session
directory, in PyTorch's snapshot format; ``record_memory_history(enabled=False)`` stops.
See docs/memory.md.
"""

from __future__ import annotations

from kinetoscope.capture.memory.history import DEFAULT_MAX_ENTRIES, current, record_memory_history

__all__ = ["DEFAULT_MAX_ENTRIES", "current", "is_recording", "record_memory_history"]


def is_recording() -> bool:
    """True while memory history is being recorded in this process."""
    return current() is not None

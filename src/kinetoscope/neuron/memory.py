"""``torch_neuronx.memory._record_memory_history`` over kinetoscope's memory history."""

from __future__ import annotations

from kinetoscope.capture.memory.history import DEFAULT_MAX_ENTRIES, record_memory_history

_STOP = (None, False)


def _record_memory_history(
    enabled: str | bool | None = "all",
    context: str | None = "all",
    stacks: str = "python",
    max_entries: int = DEFAULT_MAX_ENTRIES,
    device: str | None = None,
) -> None:
    """Start recording (``enabled="all"``, the default) or stop (``enabled=None`` or ``False``).

    Arguments follow ``torch.cuda.memory._record_memory_history``: ``context=None`` records
    no stacks, ``stacks="all"`` adds C++ frames. Unlike CUDA's unbounded default, the
    history keeps the last ``max_entries`` (100,000) events unless told otherwise.
    """
    if enabled in _STOP:
        record_memory_history(enabled=False)
        return
    record_memory_history(
        enabled=True, max_entries=max_entries, stacks=None if context is None else stacks, device=device
    )

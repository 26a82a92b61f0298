"""``Stream``, ``stream(...)`` and ``synchronize()`` for the present accelerator, harmless on CPU.

On CUDA a ``Stream`` is a ``torch.cuda.Stream`` and ``stream(s)`` is ``torch.cuda.stream``.
A CPU has no streams: work runs in program order, and a collective overlaps compute only
when issued asynchronously (``dist.all_reduce(t, async_op=True)``; gloo runs it on its own
threads). ``Stream.track(work)`` gives such work a stream's order (the previous tracked
work is waited for first), and ``synchronize()`` waits for every stream's tracked work,
as an accelerator's synchronize waits for its streams, then for the accelerator.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Iterator
from typing import Any

import torch

from kinetoscope.capture.profiling import environment as env

_lock = threading.Lock()
_streams: weakref.WeakSet[Stream] = weakref.WeakSet()


class Stream:
    """A side stream: a native accelerator stream where there is one, else a CPU placeholder."""

    def __init__(self, device: torch.device | str | None = None, priority: int = 0) -> None:
        self.device = torch.device(device if device is not None else env.accelerator_type() or "cpu")
        self.native: Any = _cuda_stream(self.device, priority) if self.device.type == "cuda" else None
        self._work: Any = None
        with _lock:
            _streams.add(self)

    def track(self, work: Any) -> Any:
        """Keep ``work`` (an async collective's handle) in this stream's order; return it."""
        self.wait()
        self._work = work
        return work

    def wait(self) -> None:
        """Wait for the tracked work, if any."""
        work, self._work = self._work, None
        if work is not None:
            work.wait()


def _cuda_stream(device: torch.device, priority: int) -> Any:
    factory: Any = torch.cuda.Stream
    return factory(device, priority)


@contextlib.contextmanager
def stream(side: Stream | None) -> Iterator[Stream | None]:
    """Run the block's device work on ``side`` (``torch.cuda.stream``); a no-op on CPU."""
    if side is None or side.native is None:
        yield side
        return
    with torch.cuda.stream(side.native):
        yield side


def synchronize() -> None:
    """Wait for every stream's tracked work, then for the accelerator (nothing more on CPU)."""
    with _lock:
        streams = list(_streams)
    for side in streams:
        side.wait()
    env.synchronize()

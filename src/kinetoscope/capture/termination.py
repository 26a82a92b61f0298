"""SIGTERM while profiling: end the job through Python, and never in the middle of an export.

When one rank of a ``torchrun`` job dies, torchrun stops the others with SIGTERM (then
SIGKILL 30 s later). SIGTERM's default action ends a process at once, so a rank that was
profiling, or writing its session, would leave it incomplete. While a session is live,
kinetoscope turns SIGTERM into ``SystemExit(143)`` instead: the ``with profile(...)`` block
unwinds, torch calls ``on_trace_ready`` and the session is written and sealed. A SIGTERM
that arrives during the export waits until the export is done, then ends the process.

Only the main thread can install signal handlers, and kinetoscope only replaces SIGTERM's
default action: a handler the job installed itself is left alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from types import FrameType

_lock = threading.Lock()
_exporting = 0
_deferred = False


def arm() -> None:
    """Route SIGTERM through ``SystemExit`` from now on, if it still has its default action."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


def armed() -> bool:
    return signal.getsignal(signal.SIGTERM) is _on_sigterm


@contextlib.contextmanager
def exporting() -> Iterator[None]:
    """Hold back SIGTERM while a session is being written."""
    global _exporting
    with _lock:
        _exporting += 1
    try:
        yield
    finally:
        with _lock:
            _exporting -= 1


def disarm() -> None:
    """Give SIGTERM its default action back, and act on one that was held back."""
    global _deferred
    if threading.current_thread() is not threading.main_thread() or _exporting:
        return
    if armed():
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _deferred:
        _deferred = False
        os.kill(os.getpid(), signal.SIGTERM)


def _on_sigterm(signum: int, _frame: FrameType | None) -> None:
    global _deferred
    if _exporting:
        _deferred = True
        return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise SystemExit(128 + signum)

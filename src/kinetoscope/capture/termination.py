"""SIGTERM while profiling: end the job through Python, and never while a session is being written.

When one rank of a ``torchrun`` job dies, torchrun stops the others with SIGTERM (then
SIGKILL 30 s later). SIGTERM's default action ends a process at once, so a rank that was
profiling, or writing its session, would leave it incomplete. While a session is live,
kinetoscope handles SIGTERM instead:

- in the job's own code, it raises ``SystemExit(143)``: the ``with profile(...)`` block
  unwinds, torch calls ``on_trace_ready`` and the session is written and sealed;
- inside torch's profiler (stopping, collecting results) or during kinetoscope's export,
  it is held back: re-checked every ``RECHECK_S`` until the job's code runs again, and
  acted on (default action) as soon as the export is done.

Only the main thread can install signal handlers, and kinetoscope only replaces SIGTERM's
default action: a handler the job installed itself is left alone.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import torch

RECHECK_S = 0.2
_TORCH_PROFILER_CODE = (
    str(Path(torch.__file__).parent / "profiler") + os.sep,
    str(Path(torch.__file__).parent / "autograd" / "profiler"),
)
_lock = threading.Lock()
_exporting = 0
_deferred = False
_recheck: threading.Timer | None = None


def arm() -> None:
    """Handle SIGTERM from now on, if it still has its default action."""
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


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    if _exporting or _in_torch_profiler(frame):
        _defer()
        return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise SystemExit(128 + signum)


def _in_torch_profiler(frame: FrameType | None) -> bool:
    """True when the interrupted code is torch's profiler (starting, stepping, stopping)."""
    while frame is not None:
        if frame.f_code.co_filename.startswith(_TORCH_PROFILER_CODE):
            return True
        frame = frame.f_back
    return False


def _defer() -> None:
    """Remember the signal and deliver it again shortly, to be re-checked at a safer moment."""
    global _deferred, _recheck
    with _lock:
        _deferred = True
        if _recheck is not None and _recheck.is_alive():
            return
        _recheck = threading.Timer(RECHECK_S, _redeliver)
        _recheck.daemon = True
        _recheck.start()


def _redeliver() -> None:
    if _deferred:
        os.kill(os.getpid(), signal.SIGTERM)

"""SIGTERM while profiling: end the job through Python, and never while a session is being written
(nor Ctrl-C: a SIGINT during the export raises its KeyboardInterrupt once the session is sealed).

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
_pending_interrupt = False  # a Ctrl-C held back during an export, raised once it is done
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
    """Hold back SIGTERM, and Ctrl-C (SIGINT), while a session is being written: ``disarm`` raises a
    held Ctrl-C's KeyboardInterrupt once the session is sealed, so the framework trace is never lost."""
    global _exporting
    with _lock:
        _exporting += 1
    interrupted: list[int] = []
    previous = _hold_sigint(interrupted)
    try:
        yield
    finally:
        with _lock:
            _exporting -= 1
        _release_sigint(previous, interrupted)


def _hold_sigint(interrupted: list[int]) -> object:
    """Replace Python's default Ctrl-C handler (only that one, only on the main thread) by one that
    notes the signal; returns what to put back (None: nothing was replaced)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    if signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        return None
    signal.signal(signal.SIGINT, lambda signum, frame: interrupted.append(signum))
    return signal.default_int_handler


def _release_sigint(previous: object, interrupted: list[int]) -> None:
    """Put Python's Ctrl-C handler back; a Ctrl-C held back is raised by ``disarm`` (after the export
    has sealed the session, so it is not mistaken for the export failing)."""
    global _pending_interrupt
    if previous is None:
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    _pending_interrupt = _pending_interrupt or bool(interrupted)


def disarm() -> None:
    """Give SIGTERM its default action back, and act on one that was held back (a held Ctrl-C too)."""
    global _deferred
    if threading.current_thread() is not threading.main_thread() or _exporting:
        return
    if armed():
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if _deferred:
        _deferred = False
        os.kill(os.getpid(), signal.SIGTERM)
    _raise_held_interrupt()


def _raise_held_interrupt() -> None:
    global _pending_interrupt
    if _pending_interrupt:
        _pending_interrupt = False
        raise KeyboardInterrupt


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    if _exporting or in_torch_profiler(frame):
        _defer()
        return
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise SystemExit(128 + signum)


def in_torch_profiler(frame: FrameType | None) -> bool:
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

"""Start and stop notifications from torch.profiler, so samplers run exactly while it records.

torch calls ``torch.autograd.profiler._run_on_profiler_start`` / ``_run_on_profiler_stop``
from the profiler object that starts or stops (``_start_trace`` / ``__exit__``). We wrap
both once per process, chaining the originals, and hand the event to the listener that
registered the running profiler's ``experimental_config``. If torch ever stops calling
them, nothing breaks: the exporter then builds the session at export time and records
that no samples were taken.
"""

from __future__ import annotations

import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any, Protocol

import torch.autograd.profiler as _autograd_profiler

_lock = threading.Lock()
_installed = False
_listeners: weakref.WeakValueDictionary[int, Listener] = weakref.WeakValueDictionary()
_active: Listener | None = None


class Listener(Protocol):
    def on_profiler_start(self, torch_profile: Any) -> None: ...

    def on_profiler_stop(self) -> None: ...


def register(config: object, listener: Listener) -> None:
    """Send start/stop of any torch profiler running with ``config`` to ``listener``."""
    with _lock:
        _install()
        _listeners[id(config)] = listener


def _install() -> None:
    global _installed
    if _installed:
        return
    _autograd_profiler._run_on_profiler_start = _wrap(_autograd_profiler._run_on_profiler_start, _started)
    _autograd_profiler._run_on_profiler_stop = _wrap(_autograd_profiler._run_on_profiler_stop, _stopped)
    _installed = True


def _wrap(original: Callable[[], None], handler: Callable[[Any], None]) -> Callable[[], None]:
    def hook() -> None:
        original()
        caller = sys._getframe(1).f_locals.get("self")
        handler(caller)

    hook.__wrapped__ = original  # type: ignore[attr-defined]
    return hook


def _started(torch_profile: Any) -> None:
    global _active
    config = getattr(torch_profile, "experimental_config", None)
    listener = _listeners.get(id(config)) if config is not None else None
    if listener is None or getattr(listener, "config", None) is not config:
        return
    _active = listener
    listener.on_profiler_start(torch_profile)


def _stopped(_torch_profile: Any) -> None:
    global _active
    listener, _active = _active, None
    if listener is not None:
        listener.on_profiler_stop()

"""Run a callback once a module has been imported, without importing it ourselves.

``when_imported("torch", attach)`` calls ``attach(module)`` right after ``import torch``
finishes executing (or at once when it is already imported). A finder placed first on
``sys.meta_path`` finds the module's spec through the other finders and wraps that spec's
loader's ``exec_module`` for this one load; the finder removes itself once nothing is
awaited, so later imports pay nothing. Standard library only: this runs at interpreter start.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable, Sequence
from importlib.abc import MetaPathFinder
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

Callback = Callable[[ModuleType], None]

_lock = threading.RLock()
_awaited: dict[str, list[Callback]] = {}


def when_imported(name: str, callback: Callback) -> None:
    """Call ``callback(module)`` once ``name`` is imported: now if it already is, else right after its import."""
    with _lock:
        module = sys.modules.get(name)
        if module is None:
            _awaited.setdefault(name, []).append(callback)
            if _FINDER not in sys.meta_path:
                sys.meta_path.insert(0, _FINDER)
            return
    callback(module)


class PostImportFinder(MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in _awaited:
            return None
        spec = _spec_from_other_finders(self, fullname, path, target)
        loader: Any = spec.loader if spec is not None else None
        if loader is None or not hasattr(loader, "exec_module"):
            return spec  # not found (awaited still), a namespace package or an unusual loader: import goes on
        with _lock:
            callbacks = _awaited.pop(fullname, [])
            if not _awaited and self in sys.meta_path:
                sys.meta_path.remove(self)
        _wrap_exec_module(loader, callbacks)
        return spec


def _spec_from_other_finders(
    self: MetaPathFinder, fullname: str, path: Sequence[str] | None, target: ModuleType | None
) -> ModuleSpec | None:
    for finder in list(sys.meta_path):
        find_spec = getattr(finder, "find_spec", None)
        if finder is self or find_spec is None:
            continue
        spec: ModuleSpec | None = find_spec(fullname, path, target)
        if spec is not None:
            return spec
    return None


def _wrap_exec_module(loader: Any, callbacks: list[Callback]) -> None:
    """Call ``callbacks`` after this loader's next ``exec_module`` (an instance attribute, removed after it)."""
    original = loader.exec_module

    def exec_module(module: ModuleType) -> None:
        try:
            original(module)
        finally:
            _drop_instance_attribute(loader)
        for callback in callbacks:
            callback(module)

    loader.exec_module = exec_module


def _drop_instance_attribute(loader: Any) -> None:
    with contextlib.suppress(AttributeError):
        del loader.exec_module


_FINDER = PostImportFinder()

"""Where step boundaries come from: the end of each optimizer step, or each return of a named function."""

from __future__ import annotations

import functools
import sys
import weakref
from collections.abc import Callable
from types import ModuleType
from typing import Any

Boundary = Callable[[], None]


def count_optimizer_steps(boundary: Boundary) -> Any:
    """Call ``boundary`` after each ``step()`` of the first optimizer that steps; return the hook's handle.

    Only that optimizer counts, so a program with several (a GAN, a per-group optimizer)
    still has one boundary per iteration; name a function with ``--step-fn`` otherwise.
    """
    from torch.optim.optimizer import register_optimizer_step_post_hook

    counted: list[weakref.ref[Any]] = []

    def after_step(optimizer: Any, _args: Any, _kwargs: Any) -> None:
        if not counted:
            counted.append(weakref.ref(optimizer))
        if counted[0]() is optimizer:
            boundary()

    return register_optimizer_step_post_hook(after_step)


def wrap_function(module: ModuleType, qualname: str, boundary: Boundary) -> None:
    """Replace ``module.<qualname>`` (a function, or ``Class.method``) by one that calls ``boundary`` on return."""
    *owner_path, name = qualname.split(".")
    owner: Any = module
    try:
        for part in owner_path:
            owner = getattr(owner, part)
        original = getattr(owner, name)
    except AttributeError:
        print(f"kinetoscope: {module.__name__} has no {qualname}; no steps will be counted", file=sys.stderr)
        return

    @functools.wraps(original)
    def counted(*args: Any, **kwargs: Any) -> Any:
        result = original(*args, **kwargs)
        boundary()
        return result

    setattr(owner, name, counted)

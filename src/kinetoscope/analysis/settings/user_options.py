"""The user's own settings that some analyses and rules read: op category patterns tried before
the built-in ones (``summary --categories``) and the device the roofline uses (``--device``).

They are typed options, read and checked once at the edge (the command line reads its options and
its documented environment variables there) and handed to the analyses by whoever runs them, for
the run alone: ``using(options)`` gives them to the analyses that run inside it (and to the threads
``reuse.threaded`` starts), and a summary made rank by rank carries them with each rank's task to
a worker process or a cluster's worker. Outside such a block the analyses use none: the built-in
categories and the device each rank recorded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from kinetoscope.model.category_rules import Rules

if TYPE_CHECKING:
    from kinetoscope.analysis.roofline.device_peaks import Device


@dataclass(frozen=True)
class UserOptions:
    """``categories``: the user's category rules, tried before the built-in ones (none: ());
    ``device``: the roofline's device for every rank (None: each rank's recorded device)."""

    categories: Rules = ()
    device: Device | None = None


NONE = UserOptions()
_GIVEN: ContextVar[UserOptions] = ContextVar("kinetoscope_user_options", default=NONE)


def given() -> UserOptions:
    """The options of the run under way (``NONE`` outside ``using``)."""
    return _GIVEN.get()


@contextlib.contextmanager
def using(options: UserOptions) -> Iterator[None]:
    """``options`` for the analyses and rules run inside the block (in this context)."""
    token = _GIVEN.set(options)
    try:
        yield
    finally:
        _GIVEN.reset(token)


def read(categories: Path | None = None, device: str | None = None) -> UserOptions:
    """The options of a category file and a device (a table entry, or a JSON or TOML file of one
    entry's fields), read and checked: OSError or ValueError names the file and the entry."""
    from kinetoscope.analysis.roofline import device_peaks as devices
    from kinetoscope.analysis.settings import categories as category_files

    rules = category_files.user_rules(categories) if categories is not None else ()
    return UserOptions(rules, devices.named(device) if device else None)

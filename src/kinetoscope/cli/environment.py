"""The command line's documented environment variables for the analyses' settings, read here at
the edge and handed on as options: nothing below the command line reads the environment for them.

``KINETOSCOPE_CATEGORIES`` (a category file) and ``KINETOSCOPE_DEVICE`` (the roofline's device)
apply where ``--categories`` and ``--device`` are not given, to every command that runs analyses;
``KINETOSCOPE_BASELINES`` is the baselines folder where ``--dir`` or ``--baselines`` is not given;
``KINETOSCOPE_GZIP_MAX_RATIO`` and ``KINETOSCOPE_GZIP_MAX_BYTES`` raise how far a gzip trace may
expand (``format.kineto.trace_source.GzipLimits``), for every command.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from kinetoscope._errors import CommandError

if TYPE_CHECKING:
    from kinetoscope.analysis.settings.user_options import UserOptions
    from kinetoscope.format.kineto.trace_source import GzipLimits

CATEGORIES_ENV = "KINETOSCOPE_CATEGORIES"
DEVICE_ENV = "KINETOSCOPE_DEVICE"
BASELINES_ENV = "KINETOSCOPE_BASELINES"


def user_options(categories: Path | None = None, device: str | None = None) -> UserOptions | None:
    """The analyses' user options: ``categories`` and ``device`` as given, else as the environment
    names them; None where neither names any (the analyses are then not imported here, so that a
    summary's read starts first). A file that cannot be read or a device that is not known is a
    ``CommandError``."""
    categories = categories or (Path(os.environ[CATEGORIES_ENV]) if os.environ.get(CATEGORIES_ENV) else None)
    device = device or os.environ.get(DEVICE_ENV) or None
    if categories is None and device is None:
        return None
    from kinetoscope.analysis.settings import user_options as options

    try:
        return options.read(categories, device)
    except (OSError, ValueError, TypeError) as exc:
        raise CommandError(str(exc)) from exc


@contextlib.contextmanager
def from_environment() -> Iterator[None]:
    """The environment's settings for what a command reads and runs: the gzip limits, and the user
    options of the analyses (none set: nothing to do)."""
    from kinetoscope.format.kineto.trace_source import limited_by

    with limited_by(gzip_limits()), _analyses_options():
        yield


@contextlib.contextmanager
def _analyses_options() -> Iterator[None]:
    options = user_options()  # None where no variable names any: the analyses are not imported
    if options is None:
        yield
        return
    from kinetoscope.analysis.settings.user_options import using

    with using(options):
        yield


def gzip_limits() -> GzipLimits:
    """The gzip limits: ``$KINETOSCOPE_GZIP_MAX_RATIO`` and ``$KINETOSCOPE_GZIP_MAX_BYTES`` where set, else the
    defaults. A value that is not a whole number of at least 1 is a ``CommandError``."""
    from kinetoscope.format.kineto import trace_source as ts

    return ts.GzipLimits(
        _whole_number(ts.MAX_RATIO_ENV, ts.DEFAULT_MAX_RATIO), _whole_number(ts.MAX_BYTES_ENV, ts.DEFAULT_MAX_BYTES)
    )


def _whole_number(name: str, default: int) -> int:
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise CommandError(f"{name}={text!r}: expected a whole number of at least 1")
    return value


def baselines_dir(given: str | Path | None) -> str | Path | None:
    """The baselines folder given, else ``$KINETOSCOPE_BASELINES`` (None: ``baselines.folder``'s default)."""
    return given or os.environ.get(BASELINES_ENV) or None

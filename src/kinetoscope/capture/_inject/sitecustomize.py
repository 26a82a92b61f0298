"""Injected by ``kinetoscope run``: start kinetoscope's step counting at interpreter start.

Python imports the first ``sitecustomize`` on its path at start-up; this directory is put
first on ``PYTHONPATH``, so this one runs, then hands over to the ``sitecustomize`` it
shadows (a distribution's or a virtual environment's). It does nothing unless
``KINETOSCOPE_RUN=1`` (or ``KINETOSCOPE_FLIGHT_RECORDER=1``) and imports no torch: see
``kinetoscope.capture.running.autorun``. A problem here is reported on stderr and never stops the program.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
_PACKAGE_ROOT = _HERE.parents[2]  # the directory holding the kinetoscope package


def _chain() -> None:
    """Run the ``sitecustomize`` this one shadows, if there is one."""
    others = [p for p in sys.path if p and _resolved(p) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - what site.py does for a failing sitecustomize
        print(f"Error in sitecustomize ({spec.origin}): {type(exc).__name__}: {exc}", file=sys.stderr)


def _resolved(entry: str) -> Path | None:
    try:
        return Path(entry).resolve()
    except OSError:
        return None


def _start() -> None:
    if importlib.util.find_spec("kinetoscope") is None:
        sys.path.append(str(_PACKAGE_ROOT))  # an interpreter without kinetoscope installed
    from kinetoscope._errors import KinetoscopeError
    from kinetoscope.capture.running import autorun, run_settings

    if not run_settings.enabled():
        return
    try:
        settings = run_settings.from_env()
    except KinetoscopeError as exc:
        print(f"kinetoscope: not profiling: {exc}", file=sys.stderr)
        return
    autorun.install(settings)


_chain()
if os.environ.get("KINETOSCOPE_RUN") or os.environ.get("KINETOSCOPE_FLIGHT_RECORDER"):
    try:
        _start()
    except Exception as exc:  # noqa: BLE001 - never stop the program because profiling could not start
        print(f"kinetoscope: not profiling: {type(exc).__name__}: {exc}", file=sys.stderr)

"""How kinetoscope starts Python processes of its own (ingest workers, the viewer's SQL worker,
the view preview, the capture's sampler, the summary's rank workers), so that nothing in the
working directory or in a profile tree can run in them.

A plain ``python -m module`` or ``python -c code`` puts the working directory first on
``sys.path``: a ``json.py`` or ``duckdb.py`` in a profile tree someone sent would run when the
receiver types ``cd tree && kinetoscope summary .``. Helpers are therefore started with ``-P``
(``PYTHONSAFEPATH``: no working directory on the path), and with an import path of kinetoscope's
own root followed by the absolute entries of the user's ``PYTHONPATH`` (a relative entry, such
as ``.``, would name the working directory again). The user's own program under
``kinetoscope run`` is not a helper: it keeps the user's environment.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

PACKAGE_ROOT = str(Path(__file__).resolve().parents[1])


def import_path(user_path: str) -> str:
    """kinetoscope's root, then the user's absolute ``PYTHONPATH`` entries, each once."""
    entries = [PACKAGE_ROOT, *(entry for entry in user_path.split(os.pathsep) if os.path.isabs(entry))]
    return os.pathsep.join(dict.fromkeys(entries))


def environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment of a helper: ``base`` (default: this process's) with a safe import path."""
    env = dict(os.environ if base is None else base)
    env["PYTHONSAFEPATH"] = "1"
    env["PYTHONPATH"] = import_path(env.get("PYTHONPATH", ""))
    return env


def module_command(module: str, *args: str) -> list[str]:
    """The command that runs ``python -m module args`` as a helper (start it with `environment`)."""
    return [sys.executable, "-P", "-m", module, *args]


def code_command(code: str, *args: str) -> list[str]:
    """The command that runs ``python -c code args`` as a helper (start it with `environment`)."""
    return [sys.executable, "-P", "-c", code, *args]


def without_working_directory(path: list[str]) -> list[str]:
    """``sys.path`` less the entries that name the working directory ('' or its absolute path)."""
    here = os.getcwd()
    return [entry for entry in path if entry and os.path.abspath(entry) != here]


@contextlib.contextmanager
def spawning() -> Iterator[None]:
    """While the block runs, processes that ``multiprocessing`` spawns start as helpers: its
    ``python -c`` start-up reads the environment (``-P`` through ``PYTHONSAFEPATH``), and the
    ``sys.path`` it hands each child leaves out the working directory (present when kinetoscope
    itself was started as ``python -m kinetoscope``)."""
    saved_env = {name: os.environ.get(name) for name in ("PYTHONSAFEPATH", "PYTHONPATH")}
    saved_path = list(sys.path)
    os.environ.update({name: value for name, value in environment().items() if name in saved_env})
    sys.path[:] = without_working_directory(sys.path)
    try:
        yield
    finally:
        sys.path[:] = saved_path
        for name, value in saved_env.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

"""Saved baselines for CI: a run's digest (``verdict.digest``) under a name, in a folder.

A baseline is one JSON file, ``NAME.json``, holding what the verdict, the comparability check
and the waterfall need, never the trace: the step times and their parts, the facts compared,
and per-step time by op, shape, module and kernel. It records the versions it was made with
(``BASELINE_VERSION`` of this file, ``verdict.DIGEST_VERSION``, the diff schema and
kinetoscope's version) and the profile it came from. When the digest's version no longer
matches, ``load`` refuses it, unless the profile it came from is still there to rebuild it from.

The folder: the one given (the command line gives ``--dir``, else ``$KINETOSCOPE_BASELINES``),
else ``.kinetoscope/baselines`` in
the project around the current directory (the nearest folder above it holding ``.git`` or
``pyproject.toml``; the current directory when none).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kinetoscope._version import __version__
from kinetoscope.analysis.compare import verdict

SCHEMA = "kinetoscope.baseline"
BASELINE_VERSION = 1
DEFAULT_DIR = Path(".kinetoscope") / "baselines"
PREFIX = "baseline:"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


class BaselineError(ValueError):
    """A baseline that cannot be saved or used, with the reason a person can act on."""


@dataclass(frozen=True)
class Stale:
    """A baseline made with other versions: what differs, and the profile it came from."""

    name: str
    why: str
    source: str


def folder(given: str | Path | None = None, cwd: Path | None = None) -> Path:
    """Where baselines live (see the module's doc)."""
    if given:
        return Path(given)
    here = (cwd or Path.cwd()).resolve()
    for place in (here, *here.parents):
        if (place / ".git").exists() or (place / "pyproject.toml").exists():
            return place / DEFAULT_DIR
    return here / DEFAULT_DIR


def path_of(name: str, where: Path) -> Path:
    if not _NAME.match(name):
        raise BaselineError(f"{name!r}: a baseline name is letters, digits, '.', '_' and '-' (up to 128)")
    return where / f"{name}.json"


def save(name: str, found: dict[str, Any], where: Path, source: str) -> Path:
    """Writes ``found`` (a digest) as baseline ``name`` in ``where``; returns the file."""
    path = path_of(name, where)
    where.mkdir(parents=True, exist_ok=True)
    record = {
        "schema": SCHEMA,
        "version": BASELINE_VERSION,
        "name": name,
        "created_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "kinetoscope_version": __version__,
        "digest_version": verdict.DIGEST_VERSION,
        "source": source,
        "digest": found,
    }
    temporary = path.with_suffix(".json.tmp")
    temporary.write_text(json.dumps(record, indent=1) + "\n")
    temporary.replace(path)
    return path


def load(name: str, where: Path) -> dict[str, Any] | Stale:
    """The digest saved as ``name``, or ``Stale`` when it was made with versions that no longer match."""
    path = path_of(name, where)
    if not path.is_file():
        known = sorted(p.stem for p in where.glob("*.json")) if where.is_dir() else []
        raise BaselineError(
            f"no baseline {name!r} in {where} (baselines there: {', '.join(known) or 'none'}); "
            f"save one with `kinetoscope baseline save {name} PROFILE`"
        )
    try:
        record = json.loads(path.read_text())
    except ValueError as exc:
        raise BaselineError(f"{path}: not a baseline ({exc})") from None
    if not isinstance(record, dict) or record.get("schema") != SCHEMA:
        raise BaselineError(f"{path}: not a kinetoscope baseline")
    why = _mismatch(record)
    if why:
        return Stale(name, why, str(record.get("source") or ""))
    found: dict[str, Any] = record["digest"]
    return found


def _mismatch(record: dict[str, Any]) -> str:
    parts = []
    if record.get("version") != BASELINE_VERSION:
        parts.append(f"baseline format {record.get('version')} (this kinetoscope reads {BASELINE_VERSION})")
    if record.get("digest_version") != verdict.DIGEST_VERSION:
        parts.append(f"digest version {record.get('digest_version')} (now {verdict.DIGEST_VERSION})")
    return "; ".join(parts)

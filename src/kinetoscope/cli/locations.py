"""Command-line arguments that name a local path or an object-store URL (``s3://bucket/prefix``)."""

from __future__ import annotations

import re
from pathlib import Path

_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
# The Dask scheduler (tcp://HOST:PORT) whose workers ingest and summarise, where no --scheduler is given.
SCHEDULER_ENV = "KINETOSCOPE_SCHEDULER"


def location(text: str) -> Path | str:
    """argparse type: a URL stays text (``Path`` would fold its ``//``), anything else is a Path."""
    return text if _URL_RE.match(text) else Path(text)


def missing(where: Path | str) -> bool:
    """True for a local path that does not exist (a URL is checked when it is opened)."""
    return isinstance(where, Path) and not where.exists()

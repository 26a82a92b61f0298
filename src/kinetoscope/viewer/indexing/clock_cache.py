"""The run's clocks for ``/api/meta`` (``clock_offsets`` per host, ``rank_clocks`` per rank), kept
beside the viewer index.

Finding them reads every collective row and matches collectives across ranks: about 2 s on a
9-million-event dataset, which the first page would otherwise wait for. So they are worked out
once per index, when ``view`` prepares it (or on the first ``/api/meta`` of an index prepared
elsewhere), and kept in ``<index>.clocks.json`` with the index's fingerprint: a rebuilt index
finds them again, a damaged or foreign file is ignored.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from kinetoscope.viewer.indexing import rank_clocks
from kinetoscope.viewer.indexing.index import ViewerIndex, index_path
from kinetoscope.viewer.pages import summaries


def clocks(index: ViewerIndex) -> dict[str, Any]:
    """The clocks of the index's run, from the kept file when it belongs to this index."""
    path = index_path(index.dataset).with_suffix(".clocks.json")
    fingerprint = _fingerprint(index)
    kept = _read(path, fingerprint)
    if kept is not None:
        return kept
    found = {**summaries.clock_offsets(index), **rank_clocks.rank_clocks(index)}
    _write(path, fingerprint, found)
    return found


def _fingerprint(index: ViewerIndex) -> str:
    row = index.cursor().execute("SELECT value FROM meta WHERE key = 'fingerprint'").fetchone()
    return str(row[0]) if row else ""


def _read(path: Path, fingerprint: str) -> dict[str, Any] | None:
    try:
        kept = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("fingerprint") != fingerprint or not fingerprint:
        return None
    found = kept.get("clocks")
    return found if isinstance(found, dict) else None


def _write(path: Path, fingerprint: str, found: dict[str, Any]) -> None:
    """Written whole or not at all (a read-only cache folder only costs the next start the work)."""
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    with contextlib.suppress(OSError):
        partial.write_text(json.dumps({"fingerprint": fingerprint, "clocks": found}), encoding="utf-8")
        partial.replace(path)
    partial.unlink(missing_ok=True)

"""Rows of the ``kernels`` table: each session's ``kernels/index.json``, one row per compiled-code name.

Only the index itself is opened (and only when it is a regular file inside the session); the file
names it lists are carried as text, never opened. A damaged index is a ``warnings`` row, never a
failure of the session.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from kinetoscope._errors import FormatError
from kinetoscope.dataset.schema import KERNELS
from kinetoscope.format.files import regular_file_inside
from kinetoscope.format.problems import ProblemLog
from kinetoscope.format.session_files import kernel_index
from kinetoscope.format.session_files import session_dir as layout

BAD_KERNEL_INDEX = "bad_kernel_index"


def kernels_table(run: str, rank: int, session: str, session_path: Path, problems: ProblemLog) -> pa.Table:
    """The session's compiled-code names with their kind, graph, files and provenance (none without an index)."""
    if not (session_path / layout.KERNEL_INDEX).exists() and not (session_path / layout.KERNEL_INDEX).is_symlink():
        return KERNELS.empty()
    path = regular_file_inside(session_path, layout.KERNEL_INDEX)
    if path is None:
        problems.add(layout.KERNEL_INDEX, "file", BAD_KERNEL_INDEX,
                     "not a regular file inside the session: refused, not read")
        return KERNELS.empty()
    try:
        index = kernel_index.read_index(path)
    except FormatError as exc:
        problems.add(layout.KERNEL_INDEX, "file", BAD_KERNEL_INDEX, f"compiled kernels not ingested: {exc}")
        return KERNELS.empty()
    rows: list[dict[str, Any]] = []
    skipped = 0
    for name, entries in index["trace_names"].items():
        for entry in entries if isinstance(entries, list) else [entries]:
            if not isinstance(entry, dict):
                skipped += 1
                continue
            rows.append({
                "run": run, "rank": rank, "session": session, "name": str(name),
                "kind": str(entry.get("kind", "")), "graph": str(entry.get("graph") or ""),
                "in_trace": bool(entry.get("in_trace", False)),
                "files": json.dumps([str(f) for f in entry.get("files", []) if isinstance(f, str)]),
                "provenance": _provenance_text(entry.get("provenance")),
            })
    if skipped:
        problems.add(layout.KERNEL_INDEX, "trace_names", BAD_KERNEL_INDEX,
                     f"{skipped} entries of the kernel index are not objects: skipped")
    return pa.Table.from_pylist(rows, schema=KERNELS.full_schema())


def _provenance_text(provenance: Any) -> str:
    return json.dumps(provenance, sort_keys=True) if isinstance(provenance, dict) else ""

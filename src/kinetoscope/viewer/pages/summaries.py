"""The summary page's data: the findings and the registered analyses (the ones `kinetoscope summary`
prints), made by the summary's runner (``report.runner``) in one pass for both pages: every rank
at once, or, for a dataset that large (``report.settings.by_rank_fits``), one rank at a time in
this process, so the server holds one rank's rows however many ranks there are.

Each analysis comes back as its rows with its name, title, description and scope. As everywhere in
the viewer, a point in time (a column ending in ``_ts_ns``) becomes an offset from the run start;
durations and sizes stay as the analyses give them (ns, bytes).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import duckdb
import pyarrow as pa

from kinetoscope.analysis import ANALYSES, ANALYSES_BY_NAME, Analysis
from kinetoscope.analysis.collectives.user_communication import patterns as user_patterns
from kinetoscope.analysis.settings.user_options import UserOptions, given
from kinetoscope.findings.document import document
from kinetoscope.query.collective_rows import collective_tables
from kinetoscope.query.dataset import Dataset
from kinetoscope.report import runner
from kinetoscope.report.runner import Made
from kinetoscope.report.settings import ReportOptions, default_threads
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying.queries import js_safe, js_safe_tree

TOP = 15


def summary(index: ViewerIndex, top: int = TOP, user: UserOptions | None = None) -> dict[str, Any]:
    """The Summary page's sections; ``user``: the user's category patterns and device (None: those
    of the caller's context, ``user_options.given``)."""
    results = _made(index, top, user).results
    return {"analyses": [section_rows(a, results[a.name], index.t0_ns) for a in ANALYSES]}


# What each index's report made (by ``top``), made once for both pages; one report at a time in
# the server, so that it holds one rank's rows even with two datasets open (compare).
_PASSES: weakref.WeakKeyDictionary[ViewerIndex, dict[int, Made]] = weakref.WeakKeyDictionary()
_ONE_PASS = threading.Lock()


def forget_made() -> None:
    """Drop what every index's report made: the next page computes it again."""
    with _ONE_PASS:
        _PASSES.clear()


def _made(index: ViewerIndex, top: int, user: UserOptions | None) -> Made:
    """Every analysis and the findings, made once by the summary's runner (at once, or rank by rank
    in this process where the dataset is that large), the findings counting from the viewer's origin."""
    with _ONE_PASS:
        made = _PASSES.setdefault(index, {})
        if top not in made:
            options = ReportOptions(top=top, threads=default_threads(), workers=1, user=user or given())
            with Dataset(index.dataset.path) as dataset:  # its own, short-lived reader: the index's stays locked down
                made[top] = runner.made(dataset, options, t0_ns=index.t0_ns)
        return made[top]


def section_rows(analysis: Analysis, table: pa.Table, t0_ns: int) -> dict[str, Any]:
    """An analysis as the Summary page shows it: its rows (times from ``t0_ns``), name, title, description."""
    rows = [{k: js_safe(_rebase(k, v, t0_ns)) for k, v in row.items()} for row in table.to_pylist()]
    return {"name": analysis.name, "title": analysis.title, "description": analysis.description,
            "scope": analysis.scope, "columns": table.schema.names, "rows": rows}


def _rebase(column: str, value: Any, t0_ns: int) -> Any:
    return value - t0_ns if column.endswith("_ts_ns") and isinstance(value, int) and value >= 0 else value


def clock_offsets(index: ViewerIndex) -> dict[str, Any]:
    """``clock_offsets``: each rank's estimated clock offset (the ``clock_offsets`` analysis), from
    the collective rows alone; where the dataset cannot give them, none and ``clock_offsets_error``
    saying why (the rest of ``/api/meta`` stands)."""
    try:
        with Dataset(index.dataset.path) as dataset:
            tables = collective_tables(dataset, None, user_patterns())
    except duckdb.Error as exc:
        return {"clock_offsets": [], "clock_offsets_error": f"cannot read the collective rows: {exc}"}
    rows = ANALYSES_BY_NAME["clock_offsets"](tables).to_pylist()
    return {"clock_offsets": [{k: js_safe(v) for k, v in row.items()} for row in rows]}


def findings(index: ViewerIndex, user: UserOptions | None = None) -> dict[str, Any]:
    """The findings document of ``kinetoscope findings --json``; its deep links count from the
    viewer's time origin, so each opens the timeline on its evidence."""
    safe: dict[str, Any] = js_safe_tree(document(_made(index, TOP, user).found or []))
    return safe

"""The summary page's data: the findings and the registered analyses (the ones `kinetoscope summary`
prints), run over the dataset's tables: every rank at once, or, for a dataset that large
(``report.settings.by_rank_fits``), one rank at a time, as `kinetoscope summary` makes it, so the
server holds one rank's rows however many ranks there are (both pages then come from that one pass).

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

from kinetoscope.analysis import ANALYSES, ANALYSES_BY_NAME, Analysis, TopOptions, needed_columns, run_all
from kinetoscope.findings import NEEDED_COLUMNS as FINDINGS_COLUMNS
from kinetoscope.findings import run_rules
from kinetoscope.findings.document import document
from kinetoscope.query.collective_rows import collective_tables
from kinetoscope.query.dataset import Dataset
from kinetoscope.report import rank_by_rank
from kinetoscope.report.settings import ReportSettings, by_rank_fits, default_threads
from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying.queries import js_safe, js_safe_tree

TOP = 15


def summary(index: ViewerIndex, top: int = TOP) -> dict[str, Any]:
    by_rank = _rank_by_rank(index, top)
    if by_rank is not None:
        results = by_rank[0]
    else:
        with Dataset(index.dataset.path) as dataset:  # its own, short-lived reader: the index's stays locked down
            tables = dataset.load(needed_columns())
        results = run_all(tables, (TopOptions(top=top),))
    return {"analyses": [section_rows(a, results[a.name], index.t0_ns) for a in ANALYSES]}


Made = tuple[dict[str, pa.Table], list[Any]] | None


# What each index's pass rank by rank made (by ``top``), made once for both pages; one pass at a
# time in the server, so that it holds one rank's rows even with two datasets open (compare).
_PASSES: weakref.WeakKeyDictionary[ViewerIndex, dict[int, Made]] = weakref.WeakKeyDictionary()
_ONE_PASS = threading.Lock()


def _rank_by_rank(index: ViewerIndex, top: int) -> Made:
    """Every analysis and the findings, rank by rank, where the dataset is that large (else None)."""
    with _ONE_PASS:
        made = _PASSES.setdefault(index, {})
        if top not in made:
            made[top] = _made_rank_by_rank(index, top)
        return made[top]


def _made_rank_by_rank(index: ViewerIndex, top: int) -> Made:
    from kinetoscope.analysis.reuse import reusing

    columns = needed_columns()
    with Dataset(index.dataset.path) as dataset:
        if not by_rank_fits(dataset, None, columns):
            return None
        settings = ReportSettings(top=top, threads=default_threads())
        with reusing():
            results, found = rank_by_rank.summarised(
                dataset, columns, [a.name for a in ANALYSES], settings, None, t0_ns=index.t0_ns
            )
    return results, found or []


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
            tables = collective_tables(dataset)
    except duckdb.Error as exc:
        return {"clock_offsets": [], "clock_offsets_error": f"cannot read the collective rows: {exc}"}
    rows = ANALYSES_BY_NAME["clock_offsets"](tables).to_pylist()
    return {"clock_offsets": [{k: js_safe(v) for k, v in row.items()} for row in rows]}


def findings(index: ViewerIndex) -> dict[str, Any]:
    """The findings document of ``kinetoscope findings --json``; its deep links count from the
    viewer's time origin, so each opens the timeline on its evidence."""
    by_rank = _rank_by_rank(index, TOP)
    if by_rank is not None:
        found = by_rank[1]
    else:
        with Dataset(index.dataset.path) as dataset:
            tables = dict(dataset.load(FINDINGS_COLUMNS))
        found = run_rules(tables, t0_ns=index.t0_ns)
    safe: dict[str, Any] = js_safe_tree(document(found))
    return safe


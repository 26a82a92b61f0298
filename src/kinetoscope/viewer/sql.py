"""Read-only SQL over the dataset for the SQL page: one SELECT (or WITH ... SELECT), nothing else.

Queries run on their own DuckDB connection whose file access is limited to the dataset folder and
locked, with a row cap and a time limit; every dataset table is a view.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import duckdb

from kinetoscope._errors import KinetoscopeError
from kinetoscope.viewer.dataset import Dataset, register_views
from kinetoscope.viewer.queries import js_safe

MAX_ROWS = 10_000
TIME_LIMIT_S = 30.0


class SqlRejectedError(KinetoscopeError):
    """The query is not a single read-only SELECT, or it failed."""


@dataclass(frozen=True)
class SqlResult:
    columns: list[str]
    types: list[str]
    rows: list[list[Any]]
    truncated: bool
    elapsed_ms: float


def check_read_only(con: duckdb.DuckDBPyConnection, sql: str) -> None:
    """Raises SqlRejectedError unless `sql` is exactly one SELECT statement."""
    try:
        statements = con.extract_statements(sql)
    except duckdb.Error as exc:
        raise SqlRejectedError(f"cannot parse the query: {exc}") from exc
    if len(statements) != 1:
        raise SqlRejectedError(f"one statement at a time, please (got {len(statements)})")
    if statements[0].type != duckdb.StatementType.SELECT:
        raise SqlRejectedError(f"only SELECT queries run here (got {statements[0].type.name})")


class SqlRunner:
    """Runs checked queries against the dataset's views."""

    def __init__(self, dataset: Dataset) -> None:
        self._con = duckdb.connect(":memory:")
        self._con.execute("SET enable_progress_bar = false")
        register_views(self._con, dataset)
        self._con.execute("SET allowed_directories = ?", [[str(dataset.root) + "/"]])
        self._con.execute("SET enable_external_access = false")
        self._con.execute("SET lock_configuration = true")
        self._lock = threading.Lock()

    def run(self, sql: str, *, max_rows: int = MAX_ROWS) -> SqlResult:
        with self._lock:
            con = self._con.cursor()
        check_read_only(con, sql)
        timer = threading.Timer(TIME_LIMIT_S, con.interrupt)
        started = time.perf_counter()
        timer.start()
        try:
            cursor = con.execute(sql)
            rows = cursor.fetchmany(max_rows + 1)
        except duckdb.Error as exc:
            raise SqlRejectedError(str(exc).strip()) from exc  # all lines: DuckDB points at the error below
        finally:
            timer.cancel()
        description = cursor.description or []
        return SqlResult(
            columns=[d[0] for d in description], types=[str(d[1]) for d in description],
            rows=[[_cell(v) for v in row] for row in rows[:max_rows]], truncated=len(rows) > max_rows,
            elapsed_ms=(time.perf_counter() - started) * 1000,
        )


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, bool | float | str):
        return value
    if isinstance(value, int):
        return js_safe(value)
    return str(value)

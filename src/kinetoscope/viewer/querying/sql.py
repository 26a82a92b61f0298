"""Read-only SQL over the dataset for the SQL page: one SELECT (or WITH ... SELECT), nothing else.

Queries run in a worker process of their own, so no query can grow the server: the worker's
data segment is capped (``WORKER_DATA_BYTES``), its DuckDB connection has a ``memory_limit``,
file access limited to the dataset folder and locked settings, each statement is interrupted
after ``TIME_LIMIT_S`` (and the worker killed if it does not stop), and a result is cut off at
``MAX_ROWS`` rows and refused past ``MAX_RESULT_BYTES``. A worker that dies is replaced. The page
starts the worker ahead of its first query (``SqlRunner.start``, when the Query tab or the SQL page
opens), so that the interpreter, DuckDB and the views load while the user writes the query.
"""

from __future__ import annotations

import os
import resource
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import duckdb

from kinetoscope import _helper_process as helper
from kinetoscope._errors import KinetoscopeError
from kinetoscope.format.private_dirs import private_dir, user_runtime_root
from kinetoscope.query.dataset import Dataset, lock_down
from kinetoscope.viewer.querying.queries import js_safe

MAX_ROWS = 10_000
MAX_RESULT_BYTES = 16 << 20
TIME_LIMIT_S = 30.0
KILL_GRACE_S = 5.0  # after the interrupt, how long the worker has to answer before it is killed
MEMORY_LIMIT = "1GB"  # DuckDB's own accounting; string results are not all counted, hence:
WORKER_DATA_BYTES = 2 << 30  # RLIMIT_DATA of the worker process
_NO_MEMORY = (f"the query needs more memory than the SQL page allows ({MEMORY_LIMIT} in DuckDB, "
              f"{WORKER_DATA_BYTES >> 30} GiB in all): select fewer or shorter values")
_FETCH_ROWS = 64
_CELL_OVERHEAD_BYTES = 8


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
    """Runs checked queries against the dataset's views, one at a time, in a worker process."""

    def __init__(self, dataset: Dataset, *, time_limit_s: float = TIME_LIMIT_S) -> None:
        self._root = dataset.path
        self._time_limit_s = time_limit_s
        self._parser = duckdb.connect(":memory:")
        self._lock = threading.Lock()
        self._worker: _Worker | None = None
        self._closed = False

    def start(self) -> bool:
        """Starts the worker unless one is running (or the runner is closed), without waiting for it
        to be ready: the next query's answer waits for its start-up, if it is not over by then.
        True when a worker is running or starting now; False when the runner is closed."""
        with self._lock:
            if self._closed:
                return False
            return self._ensure_worker().alive

    def run(self, sql: str, *, max_rows: int = MAX_ROWS) -> SqlResult:
        with self._lock:
            check_read_only(self._parser, sql)
            return self._ensure_worker().ask(sql, max_rows)

    def _ensure_worker(self) -> _Worker:
        if self._closed:
            raise SqlRejectedError("the viewer is stopping")
        if self._worker is not None and not self._worker.alive:
            self._worker.stop()  # a dead worker's socket and scratch folder go before a new one starts
            self._worker = None
        if self._worker is None:
            self._worker = _Worker(self._root, self._time_limit_s)
        return self._worker

    def close(self) -> None:
        """Stops the worker; no query or start after this starts another."""
        with self._lock:
            self._closed = True
            if self._worker is not None:
                self._worker.stop()
                self._worker = None


class _Worker:
    """One worker process (a fresh interpreter, not a fork of the threaded server) and a socket to it."""

    def __init__(self, root: Path, time_limit_s: float) -> None:
        self._time_limit_s = time_limit_s
        ours, theirs = socket.socketpair()
        command = helper.code_command(f"from {__name__} import worker_main; worker_main()",
                                      str(theirs.fileno()), str(root.resolve()), str(time_limit_s))
        env = helper.environment()
        self._process = subprocess.Popen(command, pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL)
        theirs.close()
        self._pipe = Connection(ours.detach())

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def ask(self, sql: str, max_rows: int) -> SqlResult:
        try:
            self._pipe.send((sql, max_rows))
        except OSError as exc:  # it died after the last query
            self.stop()
            raise SqlRejectedError("the SQL worker had stopped; run the query again") from exc
        if not self._pipe.poll(self._time_limit_s + KILL_GRACE_S):
            self.stop()
            raise SqlRejectedError(_too_long(self._time_limit_s))
        try:
            answer = self._pipe.recv()
        except EOFError as exc:  # the worker died: its memory cap
            self.stop()
            raise SqlRejectedError(_NO_MEMORY) from exc
        if isinstance(answer, str):
            raise SqlRejectedError(answer)
        assert isinstance(answer, SqlResult)
        return answer

    def stop(self) -> None:
        self._process.kill()
        self._process.wait(timeout=10)
        self._pipe.close()
        shutil.rmtree(scratch_dir(self._process.pid), ignore_errors=True)


def scratch_dir(pid: int) -> Path:
    """Where the worker `pid` spills (DuckDB lets its queries read there): a private folder."""
    return private_dir(user_runtime_root() / "sql") / str(pid)


def worker_main() -> None:
    """Entry point of the worker process: ``FD ROOT TIME_LIMIT_S`` on the command line."""
    resource.setrlimit(resource.RLIMIT_DATA, (WORKER_DATA_BYTES, WORKER_DATA_BYTES))
    _serve(Connection(int(sys.argv[1])), sys.argv[2], float(sys.argv[3]))


def _serve(pipe: Connection, root: str, time_limit_s: float) -> None:
    """The worker's loop: (sql, max_rows) in, an SqlResult or an error message out."""
    dataset = Dataset(Path(root))
    con = duckdb.connect(":memory:")
    con.execute("SET enable_progress_bar = false")
    dataset.create_views(con)
    scratch = scratch_dir(os.getpid())
    scratch.mkdir(mode=0o700, exist_ok=True)
    lock_down(con, dataset, memory_limit=MEMORY_LIMIT, temp_dir=scratch)
    try:
        _answer_queries(pipe, con, time_limit_s)
    finally:
        con.close()
        shutil.rmtree(scratch, ignore_errors=True)


def _answer_queries(pipe: Connection, con: duckdb.DuckDBPyConnection, time_limit_s: float) -> None:
    while True:
        try:
            sql, max_rows = pipe.recv()
        except EOFError:
            return
        try:
            answer: SqlResult | str = _execute(con, sql, max_rows, time_limit_s)
        except SqlRejectedError as exc:
            answer = str(exc)
        try:
            pipe.send(answer)
        except MemoryError:
            pipe.send(_NO_MEMORY)
        except OSError:  # the server went away
            return


def _execute(con: duckdb.DuckDBPyConnection, sql: str, max_rows: int, time_limit_s: float) -> SqlResult:
    cursor = con.cursor()
    timer = threading.Timer(time_limit_s, cursor.interrupt)
    started = time.perf_counter()
    timer.start()
    try:
        cursor.execute(sql)
        rows = _fetch_capped(cursor, max_rows + 1)
    except duckdb.InterruptException as exc:
        raise SqlRejectedError(_too_long(time_limit_s)) from exc
    except (duckdb.OutOfMemoryException, MemoryError) as exc:
        raise SqlRejectedError(_NO_MEMORY) from exc
    except duckdb.Error as exc:
        raise SqlRejectedError(str(exc).strip()) from exc  # all lines: DuckDB points at the error below
    finally:
        timer.cancel()
    description = cursor.description or []
    return SqlResult(
        columns=[d[0] for d in description], types=[str(d[1]) for d in description],
        rows=rows[:max_rows], truncated=len(rows) > max_rows, elapsed_ms=(time.perf_counter() - started) * 1000,
    )


def _too_long(time_limit_s: float) -> str:
    return f"the query ran longer than {time_limit_s:g} s and was stopped"


def _fetch_capped(cursor: duckdb.DuckDBPyConnection, max_rows: int) -> list[list[Any]]:
    """Up to `max_rows` rows as JSON-ready cells; SqlRejectedError past MAX_RESULT_BYTES."""
    rows: list[list[Any]] = []
    size_bytes = 0
    while len(rows) < max_rows and (batch := cursor.fetchmany(min(_FETCH_ROWS, max_rows - len(rows)))):
        for raw in batch:
            row = [_cell(v) for v in raw]
            size_bytes += sum(len(v) if isinstance(v, str) else _CELL_OVERHEAD_BYTES for v in row)
            if size_bytes > MAX_RESULT_BYTES:
                raise SqlRejectedError(f"the result is larger than {MAX_RESULT_BYTES >> 20} MiB: select fewer "
                                       "rows or columns, or shorten long values (left(x, 100))")
            rows.append(row)
    return rows


def _cell(value: Any) -> Any:
    if value is None or isinstance(value, bool | float | str):
        return value
    if isinstance(value, int):
        return js_safe(value)
    return str(value)

"""The SQL page's worker process: started ahead of the first query, and that query answered by it."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying.sql import SqlRejectedError, SqlRunner, scratch_dir


def sql_workers() -> set[int]:
    """The process ids of this process's SQL workers that are running (Linux: read from /proc)."""
    found = set()
    for entry in Path("/proc").iterdir():
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:  # not a process, or gone
            continue
        state, parent_pid = stat.rsplit(")", 1)[1].split()[:2]  # after the command's name, in parentheses
        if int(parent_pid) == os.getpid() and state != "Z" and b"worker_main" in command:
            found.add(int(entry.name))
    return found


def test_a_started_worker_is_running_before_the_first_query_and_answers_it(multirank: ViewerIndex) -> None:
    before = sql_workers()
    runner = SqlRunner(multirank.dataset)
    try:
        # WHEN the runner is started, twice, with no query
        assert runner.start() and runner.start()
        # THEN one worker process runs
        started = sql_workers() - before
        assert len(started) == 1
        # AND the first query is answered by that worker, not by a new one
        assert runner.run("SELECT 42 AS answer").rows == [[42]]
        assert sql_workers() - before == started
    finally:
        runner.close()
    assert not sql_workers() & started


def test_a_closed_runner_starts_no_worker_and_refuses_queries(multirank: ViewerIndex) -> None:
    before = sql_workers()
    runner = SqlRunner(multirank.dataset)
    runner.start()
    runner.close()
    # WHEN a start or a query arrives while the viewer stops, THEN none starts, and the start says so
    assert runner.start() is False
    with pytest.raises(SqlRejectedError, match="stopping"):
        runner.run("SELECT 1")
    assert sql_workers() - before == set()


def test_a_dead_worker_is_cleaned_up_before_the_next_starts(multirank: ViewerIndex) -> None:
    before = sql_workers()
    runner = SqlRunner(multirank.dataset)
    try:
        assert runner.run("SELECT 1 AS one").rows == [[1]]
        (first,) = sql_workers() - before
        scratch = scratch_dir(first)
        assert scratch.is_dir()
        # GIVEN the worker killed from outside (its memory cap, an OOM kill)
        os.kill(first, signal.SIGKILL)
        # until it can be reaped (WNOWAIT: left for the runner to reap): a killed process's threads
        # (DuckDB's) still exit a moment after it shows as a zombie
        while os.waitid(os.P_PID, first, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None:
            time.sleep(0.01)
        # WHEN the next start comes, THEN the dead one's scratch folder is gone and a new one answers
        runner.start()
        assert not scratch.exists()
        assert runner.run("SELECT 2 AS two").rows == [[2]]
    finally:
        runner.close()

"""The SQL page's worker process: started ahead of the first query, and that query answered by it."""

from __future__ import annotations

import os
from pathlib import Path

from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying.sql import SqlRunner


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
        runner.start()
        runner.start()
        # THEN one worker process runs
        started = sql_workers() - before
        assert len(started) == 1
        # AND the first query is answered by that worker, not by a new one
        assert runner.run("SELECT 42 AS answer").rows == [[42]]
        assert sql_workers() - before == started
    finally:
        runner.close()
    assert not sql_workers() & started

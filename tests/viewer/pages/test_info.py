"""The Info page's data: versions, config, clocks and files per session, and what was lost."""

from __future__ import annotations

import duckdb

from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.pages import info

from ..test_api import api, base  # noqa: F401  (the live server fixture)


def test_sessions_carry_versions_modes_clocks_and_their_files(multirank: ViewerIndex) -> None:
    found = info.info(multirank)
    assert [s["rank"] for s in found["sessions"]] == [0, 1, 2, 3]
    first = found["sessions"][0]
    assert first["backend"] == "nccl" and first["world_size"] == 4 and first["host"] == "synthetic-host"
    assert first["start_utc"].endswith("Z")
    assert first["profiled_ns"] == int(first["stop_ns"]) - int(first["start_ns"]) > 0
    assert {f["name"] for f in first["files"]} >= {"trace.json"}
    assert all(f["rank"] == 0 for f in first["files"])
    assert found["missing"] == []


def test_what_was_lost_is_counted_dropped_events_damaged_files_and_warnings(multirank: ViewerIndex) -> None:
    found = info.info(multirank)
    assert found["lost"]["dropped_events"] == 51_234 - 50_000  # the last rank's manifest says so
    assert [(f["rank"], f["name"], f["status"]) for f in found["damaged_files"]] == [(3, "host_mem.pb", "truncated")]
    assert found["lost"]["warnings"] >= 1 and found["lost"]["notes"] >= 1
    assert {w["kind"] for w in found["warnings"]} >= {"dropped_events"}


def test_a_table_lacking_columns_says_which_instead_of_failing() -> None:
    con = duckdb.connect(":memory:")
    con.execute("CREATE TABLE sessions AS SELECT 'r' AS run, 0::INT AS rank, 's' AS session, 7 AS event_count")
    missing: list[str] = []
    rows = info.read_rows(con, "sessions", ("run", "rank", "session", "event_count", "torch_version"), missing)
    assert rows == [{"run": "r", "rank": 0, "session": "s", "event_count": 7}]
    assert missing == ["sessions.torch_version"]
    assert info.read_rows(con, "files", info.FILE_COLUMNS, missing) == [] and missing[-1] == "files (the whole table)"


def test_info_route(base: str) -> None:  # noqa: F811
    found = api(base, "/api/info")
    assert found["viewer_version"] and len(found["sessions"]) == 4

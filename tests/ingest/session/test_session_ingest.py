"""One bad file in one rank of a tree costs that file (or that session), named in the ingest's report
and the dataset's ``warnings`` table; every other rank is ingested and the dataset is committed."""

from __future__ import annotations

import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.cli import main
from kinetoscope.dataset import transaction
from kinetoscope.format.session_files import trace_info as ti
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.ingest.session import session_ingest
from kinetoscope.report.opening import open_dataset

from ..helpers import annotated_step, write_session

SNAPSHOT = "memory_snapshot_rank{rank}.pickle"


def _snapshot() -> dict[str, Any]:
    frames = [{"filename": "train.py", "name": "step", "line": 12}]
    entry = {"action": "alloc", "addr": 4096, "size": 512, "stream": 0, "time_us": 1_700_000_000_000_000,
             "frames": frames}  # fmt: skip
    block = {"address": 4096, "size": 512, "requested_size": 512, "state": "active_allocated", "frames": frames}
    segment = {"device": 0, "address": 4096, "total_size": 512, "stream": 0, "blocks": [block]}
    return {"segments": [segment], "device_traces": [[entry]]}


def _tree(root: Path, ranks: int = 3) -> list[Path]:
    sessions = []
    for rank in range(ranks):
        session = write_session(root, annotated_step(), rank=rank, pid=4000 + rank, world_size=ranks)
        (session / SNAPSHOT.format(rank=rank)).write_bytes(pickle.dumps(_snapshot(), protocol=4))
        sessions.append(session)
    return sessions


def _edit_snapshot(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def damage(session: Path) -> None:
        path = next(session.glob("memory_snapshot_rank*.pickle"))
        snapshot = _snapshot()
        change(snapshot)
        path.write_bytes(pickle.dumps(snapshot, protocol=4))

    return damage


def _edit_info(change: Callable[[Any], None]) -> Callable[[Path], None]:
    def damage(session: Path) -> None:
        info = ti.read_trace_info(session)
        change(info)
        ti.write_trace_info(session, info)

    return damage


def _entry(name: str, value: object) -> Callable[[dict[str, Any]], None]:
    return lambda s: s["device_traces"][0][0].__setitem__(name, value)


DAMAGE = {
    "segments-str": (_edit_snapshot(lambda s: s.__setitem__("segments", ["x"])), "segments[0]"),
    "addr-str": (_edit_snapshot(_entry("addr", "x")), "device_traces[0][0].addr"),
    "nan": (_edit_snapshot(_entry("size", float("nan"))), "device_traces[0][0].size"),
    "inf": (_edit_snapshot(_entry("time_us", float("inf"))), "device_traces[0][0].time_us"),
    "list": (_edit_snapshot(_entry("stream", [0])), "device_traces[0][0].stream"),
    "2^64": (_edit_snapshot(_entry("addr", 2**64)), "device_traces[0][0].addr"),
    "surrogate": (_edit_snapshot(lambda s: s["segments"][0]["blocks"][0].__setitem__("state", "\ud800")),
                  "segments[0].blocks[0].state"),
    "state-99": (_edit_info(lambda info: setattr(info, "state", 99)), "UNKNOWN(99)"),
    "name-5000": (_edit_info(lambda info: info.files.add(name="a" * 5000, size_bytes=3)), "a" * 100),
}  # fmt: skip


@pytest.mark.parametrize("case", list(DAMAGE))
def test_one_bad_file_in_one_rank_costs_that_file_and_the_tree_is_ingested(case: str, tmp_path: Path) -> None:
    # GIVEN a three-rank tree whose rank 1 holds one bad file
    damage, place = DAMAGE[case]
    sessions = _tree(tmp_path / "prof")
    damage(sessions[1])
    # WHEN it is ingested
    report = ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds", jobs=1))
    # THEN every rank's events are in, the dataset is committed, and the warnings table names the file and place
    assert sorted(o.rank for o in report.outcomes) == [0, 1, 2]
    messages = [o.message for o in report.outcomes]
    assert all(o.status == session_ingest.OK for o in report.outcomes if o.rank != 1), messages
    assert transaction.interrupted(tmp_path / "ds") == []
    with open_dataset(tmp_path / "ds") as ds:
        assert ds.sql("SELECT count(DISTINCT rank) FROM events").column(0)[0].as_py() == 3
        warnings = ds.sql("SELECT file, message FROM warnings WHERE rank = 1").to_pylist()
        assert ds.table("allocations", run=ds.runs[0], rank=0).num_rows == 1
    assert any(place in w["message"] or place in w["file"] for w in warnings), warnings


def test_an_error_no_reader_foresaw_fails_that_session_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a tree where reading rank 1's snapshot raises an error kinetoscope did not raise itself
    sessions = _tree(tmp_path / "prof")
    real = session_ingest.allocation_table

    def broken(path: Path, *args: Any, **kwargs: Any) -> Any:
        if path.parent == sessions[1]:
            raise ZeroDivisionError("unforeseen")
        return real(path, *args, **kwargs)

    monkeypatch.setattr(session_ingest, "allocation_table", broken)
    # WHEN it is ingested in one process
    report = ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds", jobs=1))
    # THEN rank 1 failed, named with its error, the others are in, and the warnings table says why
    status = {o.rank: (o.status, o.message) for o in report.outcomes}
    assert status[1] == (session_ingest.FAILED, "ZeroDivisionError: unforeseen")
    assert status[0][0] == status[2][0] == session_ingest.OK
    with open_dataset(tmp_path / "ds") as ds:
        messages = ds.sql("SELECT message FROM warnings WHERE rank = 1").column(0).to_pylist()
        assert ds.sql("SELECT count(DISTINCT rank) FROM events").column(0)[0].as_py() >= 2
    assert any("ZeroDivisionError: unforeseen" in m for m in messages)


def test_summary_and_sql_of_a_tree_with_one_bad_snapshot_exit_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sessions = _tree(tmp_path / "prof", ranks=2)
    _edit_snapshot(_entry("addr", "x"))(sessions[1])
    assert main(["summary", str(tmp_path / "prof")]) in (0, 1)
    assert main(["sql", str(tmp_path / "prof"), "SELECT count(*) AS n FROM events"]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    shutil.rmtree(tmp_path / "prof")

"""Ingest says how far it has read a session's trace file (``ingest(..., reading=...)``) where the
sessions are read in this process one after another; workers report only when a session ends."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kinetoscope.format.kineto import event_stream, trace_source
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.ingest import IngestOptions, ingest

from ..helpers import import_scenario


def _recording() -> tuple[list[tuple[str, int, int]], Any]:
    calls: list[tuple[str, int, int]] = []
    return calls, lambda session, read, size: calls.append((session, read, size))


def test_a_session_read_here_reports_its_bytes_up_to_the_whole_file(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(event_stream, "CHUNK_BYTES", 64 << 10)  # many reads of the small fixture
    profile = import_scenario("import-cuda-alexnet", tmp_path / "prof")
    (session,) = layout.find_sessions(profile)
    size_bytes = (session / layout.TRACE_JSON).stat().st_size
    calls, reading = _recording()
    ended: list[tuple[int, int, str]] = []
    report = ingest(
        IngestOptions(profile_dir=profile, out=tmp_path / "ds", jobs=1),
        lambda done, total, name: ended.append((done, total, name)),
        reading,
    )
    assert report.status in ("ok", "partial")
    assert len(calls) > 2
    names = {name for name, _, _ in calls}
    assert names == {report.outcomes[0].session} and ended == [(0, 1, ""), (1, 1, report.outcomes[0].session)]
    read = [r for _, r, _ in calls]
    assert read == sorted(read) and read[-1] == size_bytes
    assert {size for _, _, size in calls} == {size_bytes}
    assert trace_source.READ_PROGRESS.get() is None  # followed for the ingest only


def test_sessions_ingested_by_workers_report_only_as_they_end(tmp_path: Path) -> None:
    profile = import_scenario("dlrm_8rank", tmp_path / "prof")
    calls, reading = _recording()
    ended: list[int] = []
    report = ingest(
        IngestOptions(profile_dir=profile, out=tmp_path / "ds", jobs=2),
        lambda done, total, name: ended.append(done),
        reading,
    )
    assert len(report.outcomes) == 8 and ended == list(range(0, 9))  # how many first, then as each ends
    assert calls == []

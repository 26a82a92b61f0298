"""Paths read from files someone else wrote (a dataset manifest, a session manifest) never reach
outside their folder: each test plants such a path and checks nothing outside is touched."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.cli import main
from kinetoscope.cli.demo import describe_session
from kinetoscope.dataset.directory import MANIFEST
from kinetoscope.format.files import inside, regular_file_inside
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti
from kinetoscope.ingest import IngestOptions, default_dataset_path, ingest
from kinetoscope.report.opening import open_dataset
from kinetoscope.verify import session_checks as verify_session
from kinetoscope.verify.report import verify

from .helpers import write_session, x


def test_inside_refuses_absolute_parent_and_linked_names(tmp_path: Path) -> None:
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "ok.txt").write_text("x")
    (tmp_path / "root" / "out").symlink_to(tmp_path)
    assert inside(tmp_path / "root", "ok.txt") == (tmp_path / "root" / "ok.txt").resolve()
    for name in ("/etc/passwd", "../root2/x", "a/../../x", "out/secret", ".", "", "a\0b"):
        assert inside(tmp_path / "root", name) is None, name
    assert regular_file_inside(tmp_path / "root", "ok.txt") is not None
    assert regular_file_inside(tmp_path / "root", "missing") is None


def _plant_stale_session(dataset: Path, run: str, parts: list[str]) -> None:
    manifest = json.loads((dataset / MANIFEST).read_text())
    manifest["sessions"]["planted"] = {"run": run, "rank": 0, "session": "gone/1", "fingerprint": "x",
                                       "parts": parts, "status": "ok"}
    (dataset / MANIFEST).write_text(json.dumps(manifest))


def test_a_crafted_dataset_manifest_deletes_nothing_outside_the_dataset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = tmp_path / "prof"
    write_session(profile, [x("aten::mm", 0, 10)])
    victims = [tmp_path / "victim.parquet", tmp_path / "victim.txt"]
    for victim in victims:
        victim.write_text("keep me")
    dataset = default_dataset_path(profile)
    ingest(IngestOptions(profile_dir=profile, out=dataset))
    (dataset / "events" / "escape").symlink_to(tmp_path)
    planted = [str(victims[0]), "../../../victim.parquet", "events/escape/victim.parquet", "../../../victim.txt"]
    _plant_stale_session(dataset, "prof", planted)

    assert main(["summary", str(profile)]) == 0  # summary ingests the tree, and so forgets the stale session
    assert all(victim.read_text() == "keep me" for victim in victims)
    err = capsys.readouterr().err
    assert err.count("refused to remove") == len(planted) and "Traceback" not in err


def test_ingest_reports_refused_manifest_paths(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write_session(tmp_path / "prof", [x("aten::mm", 0, 10)])
    (tmp_path / "victim.parquet").write_text("keep me")
    out = tmp_path / "ds"
    ingest(IngestOptions(profile_dir=tmp_path / "prof", out=out))
    _plant_stale_session(out, "prof", ["../victim.parquet"])
    assert main(["ingest", str(tmp_path / "prof"), "--out", str(out), "--quiet"]) == 0
    assert (tmp_path / "victim.parquet").exists()
    assert "warning:" in capsys.readouterr().out


def test_a_manifest_whose_parts_are_not_a_list_is_a_clear_error(tmp_path: Path) -> None:
    write_session(tmp_path / "prof", [x("aten::mm", 0, 10)])
    out = tmp_path / "ds"
    ingest(IngestOptions(profile_dir=tmp_path / "prof", out=out))
    _plant_stale_session(out, "prof", "../victim")  # type: ignore[arg-type]
    assert main(["ingest", str(tmp_path / "prof"), "--out", str(out)]) == 2


def _listing(name: str, size: int = 0) -> object:
    def edit(info: ti.pb.TraceInfo) -> None:  # type: ignore[name-defined]
        info.files.add(name=name, size_bytes=size, sha256="00" * 32)

    return edit


@pytest.mark.timeout(20)
@pytest.mark.parametrize(
    ("name", "size"), [("/dev/zero", 0), ("../../../../../../../../dev/zero", 0), ("zero_link", 0),
                       ("fifo", 0), ("../../../etc.txt", 6), ("/proc/self/environ", 0)])
def test_verify_reads_no_file_outside_the_session(tmp_path: Path, name: str, size: int) -> None:
    (tmp_path / "etc.txt").write_text("secret")
    session = write_session(tmp_path / "prof", [x("aten::mm", 0, 10)], edit=_listing(name, size))
    os.mkfifo(session / "fifo")
    os.symlink("/dev/zero", session / "zero_link")
    findings = [f for f in verify(tmp_path / "prof").all_findings() if f.file == name]
    assert [f.check for f in findings] == ["outside_session"]
    assert "not a regular file inside the session" in findings[0].message


@pytest.mark.timeout(20)
@pytest.mark.parametrize("name", [layout.TRACE_JSON, "cpu_util.pb", "memory_snapshot.pickle"])
@pytest.mark.parametrize("target", ["/dev/zero", "outside"])
def test_verify_reads_no_session_file_that_links_out(
    tmp_path: Path, name: str, target: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def scan_refusing_links(path: Path, *args: Any, **kwargs: Any) -> object:
        assert not path.is_symlink(), f"verify read {path}"
        return real_scan(path, *args, **kwargs)

    real_scan = verify_session.scan_trace
    monkeypatch.setattr(verify_session, "scan_trace", scan_refusing_links)
    session = write_session(tmp_path / "prof", [x("aten::mm", 0, 10)])
    (tmp_path / "outside").write_bytes(b"\x0a\x02hi" * 10)
    (session / name).unlink(missing_ok=True)
    os.symlink(target if target.startswith("/") else tmp_path / target, session / name)
    findings = [f for f in verify(tmp_path / "prof").all_findings() if f.file == name]
    assert [f.check for f in findings if f.check == "outside_session"] == ["outside_session"]


def test_describing_a_session_reads_no_listed_file_outside_it(tmp_path: Path) -> None:
    (tmp_path / "outside.pb").write_bytes(b"not packets")
    name = "../../../outside.pb"
    session = write_session(tmp_path / "prof", [x("aten::mm", 0, 10)], edit=_listing(name))
    out = io.StringIO()
    describe_session(session, out)
    assert f"{name}" in out.getvalue() and "not read" in out.getvalue()


@pytest.mark.timeout(60)
def test_ingest_reads_no_session_file_that_links_out(tmp_path: Path) -> None:
    # GIVEN a session whose trace.json links to another trace outside it, whose cpu_util.pb links to
    # /dev/zero and whose snapshot links to a file outside (a profile tree someone sent)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    decoy = write_session(outside, [x("aten::secret", 0, 10)])
    (outside / "private.pickle").write_bytes(b"\x80\x04}\x94.")
    session = write_session(tmp_path / "profile", [x("aten::mm", 0, 10)])
    (session / layout.TRACE_JSON).unlink()
    (session / layout.TRACE_JSON).symlink_to(decoy / layout.TRACE_JSON)
    (session / layout.CPU_UTIL).symlink_to("/dev/zero")
    (session / "memory_snapshot_rank0.pickle").symlink_to(outside / "private.pickle")
    # THEN ingest ends, reads none of them, and names each in the warnings table
    report = ingest(IngestOptions(profile_dir=tmp_path / "profile", out=tmp_path / "ds", jobs=1))
    (outcome,) = report.outcomes
    assert outcome.stats.events == 0 and outcome.stats.counters == 0 and outcome.status != "ok"
    with open_dataset(tmp_path / "ds") as dataset:
        refused = dataset.sql("SELECT file FROM warnings WHERE kind = 'not_a_session_file' ORDER BY file")
        names = [layout.CPU_UTIL, "memory_snapshot_rank0.pickle", layout.TRACE_JSON]
        assert refused.column("file").to_pylist() == names
        assert dataset.sql("SELECT count(*) AS n FROM allocations").column("n").to_pylist() == [0]


@pytest.mark.timeout(20)
def test_verify_never_walks_a_kernels_link_out_of_the_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session = write_session(tmp_path / "prof", [x("triton_poi_fused_add_0", 0, 1, kernel_backend="triton",
                                                   kernel_hash="abc123")])
    (tmp_path / "elsewhere").mkdir()
    (session / layout.KERNELS_DIR).symlink_to(tmp_path / "elsewhere")
    walked: list[Path] = []
    real_rglob = Path.rglob
    monkeypatch.setattr(Path, "rglob", lambda self, pattern: (walked.append(self), real_rglob(self, pattern))[1])
    findings = [f for f in verify(tmp_path / "prof").all_findings() if f.file == layout.KERNELS_DIR]
    assert [f.check for f in findings] == ["outside_session"]
    assert session / layout.KERNELS_DIR not in walked


def test_a_kinetoscope_folder_linked_out_of_the_tree_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profile = tmp_path / "prof"
    write_session(profile, [x("aten::mm", 0, 10)])
    (tmp_path / "elsewhere").mkdir()
    (profile / layout.CACHE_FOLDER).symlink_to(tmp_path / "elsewhere")
    assert main(["summary", str(profile)]) == 2
    err = capsys.readouterr().err
    assert "leads outside" in err and "elsewhere" in err and "Traceback" not in err
    assert list((tmp_path / "elsewhere").iterdir()) == []  # no dataset was written there


def test_the_trees_root_may_itself_be_a_link(tmp_path: Path) -> None:
    profile = tmp_path / "prof"
    write_session(profile, [x("aten::mm", 0, 10)])
    (tmp_path / "alias").symlink_to(profile)
    assert main(["summary", str(tmp_path / "alias")]) == 0
    assert (profile / layout.CACHE_FOLDER / "dataset").is_dir()


def test_a_viewer_folder_linked_out_of_the_dataset_is_refused(tmp_path: Path) -> None:
    from kinetoscope.format.files import OutsideTreeError
    from kinetoscope.viewer.indexing.index import ViewerIndex

    profile = tmp_path / "prof"
    write_session(profile, [x("aten::mm", 0, 10)])
    dataset = open_dataset(profile)
    (tmp_path / "elsewhere").mkdir()
    (dataset.path / "_viewer").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OutsideTreeError, match="leads outside"):
        ViewerIndex.open(dataset)
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_the_files_table_marks_unlisted_links_out_of_the_session(tmp_path: Path) -> None:
    (tmp_path / "secret.bin").write_bytes(b"x" * 1234)
    session = write_session(tmp_path / "profile", [x("aten::mm", 0, 10)])
    (session / "extra.bin").symlink_to(tmp_path / "secret.bin")
    ingest(IngestOptions(profile_dir=tmp_path / "profile", out=tmp_path / "ds", jobs=1))
    with open_dataset(tmp_path / "ds") as dataset:
        row = dataset.sql("SELECT size_bytes, status FROM files WHERE name = 'extra.bin'").to_pylist()
    assert row == [{"size_bytes": -1, "status": "outside"}]


def test_a_session_reached_through_a_link_out_of_the_tree_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    session = write_session(tmp_path / "elsewhere", [x("aten::secret", 0, 10)], instance="other", pid=7)
    profile = tmp_path / "prof"
    write_session(profile, [x("aten::mm", 0, 10)])
    (profile / session.parent.name).symlink_to(session.parent)  # other_pid_7/<timestamp> of another tree
    assert main(["summary", str(profile)]) == 2
    assert "leads outside" in capsys.readouterr().err

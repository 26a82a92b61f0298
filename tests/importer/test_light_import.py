"""Light sessions: ``import --no-pb`` (and the raw-trace cache) write trace.json and a complete
trace_info.pb, no packet files; ``import --pb`` writes them later, the same bytes as a full import."""

from __future__ import annotations

import gzip
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.cli import main
from kinetoscope.format.files import sha256_of
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti
from kinetoscope.importer import light_session, trace_cache

from ..conftest import REPO, SHARED

DATA = REPO / "tests" / "data"
SCENARIOS = sorted(p.name for p in DATA.glob("import-*"))
PUBLIC_TRACE = SHARED / "datasets/public-traces/hta/tests/data/df_index_resolver/df_index_resolver.json.gz"


def _trace(scenario: str) -> Path:
    (trace,) = (DATA / scenario).glob("*.json*")
    return trace


def _session(out: Path) -> Path:
    (session,) = layout.find_sessions(out)
    return session


def _files(session: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(session.iterdir()) if p.name != layout.TRACE_INFO}


def _info_apart_from_out_dir(session: Path) -> Any:
    info = ti.read_trace_info(session)
    info.config.profile_output_dir = ""  # the --out folder, which differs by design
    return info


def _light_then_pb(trace: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Any]:
    assert main(["import", str(trace), "--out", str(out), "--no-pb"]) == 0
    session = _session(out)
    light = ti.read_trace_info(session)
    assert "light session" in capsys.readouterr().out
    assert main(["import", "--pb", str(out)]) == 0
    assert "wrote ntrace.pb" in capsys.readouterr().out
    return session, light


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_packet_files_written_later_are_those_of_a_full_import(
    tmp_path: Path, scenario: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a real trace imported light, and the same trace imported in full
    trace = _trace(scenario)
    session, light = _light_then_pb(trace, tmp_path / "light", capsys)
    assert main(["import", str(trace), "--out", str(tmp_path / "full")]) == 0
    full = _session(tmp_path / "full")
    # THEN the light session listed only what it held, and said why the packet files were missing
    assert [f.name for f in light.files] == [layout.TRACE_JSON]
    assert [(m.mode, list(m.files), m.reason) for m in light.modes] == [
        (ti.Mode.MODE_DEVICE, [], light_session.NOT_WRITTEN),
        (ti.Mode.MODE_RUNTIME, [], light_session.NOT_WRITTEN),
    ]
    assert light.state == ti.SessionState.SESSION_STATE_COMPLETE
    # AND once --pb has run, the files and trace_info.pb are those of the full import, byte for byte
    assert session.relative_to(tmp_path / "light") == full.relative_to(tmp_path / "full")
    assert _files(session) == _files(full)
    assert _info_apart_from_out_dir(session) == _info_apart_from_out_dir(full)
    assert all(entry.sha256 == sha256_of(session / entry.name) for entry in ti.read_trace_info(session).files)


def test_a_damaged_trace_counts_the_same_damage_either_way(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a gzipped trace cut short (the copy meets the cut) with an unreadable event in it
    events = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": ts, "dur": 1,
               "args": {"device": 0, "stream": 7, "correlation": ts}} for ts in range(1, 200)]  # fmt: skip
    text = '{"traceEvents": [\n' + ",\n".join(json.dumps(e) for e in events)
    text = text.replace('"ts": 5,', '"ts": 5, oops,', 1)
    trace = tmp_path / "cut.json.gz"
    trace.write_bytes(gzip.compress(text.encode())[:-200])
    session, light = _light_then_pb(trace, tmp_path / "light", capsys)
    assert main(["import", str(trace), "--out", str(tmp_path / "full")]) == 0
    full = _session(tmp_path / "full")
    # THEN the light session records what copying met; with its packet files, what the full import counts
    assert {s.reason for s in light.skipped_events} == {"truncated"}
    skipped = {s.reason: s.count for s in ti.read_trace_info(full).skipped_events}
    assert skipped["malformed_json"] == 1 and skipped["truncated"] >= 2
    assert _info_apart_from_out_dir(session) == _info_apart_from_out_dir(full)
    assert _files(session) == _files(full)


def test_verify_reads_a_light_session_as_notes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = _trace("import-cuda-multi-stream")
    assert main(["import", str(trace), "--out", str(tmp_path), "--no-pb"]) == 0
    capsys.readouterr()
    code = main(["verify", str(tmp_path), "--json"])
    report = json.loads(capsys.readouterr().out)
    # THEN the packet files a light import leaves out are not reported: trace.json holds their
    # events, nothing is missing (no "left out by a light import" note for every imported trace)
    findings = report["findings"]
    assert code == 0
    assert {(f["severity"], f["check"]) for f in findings} <= {("note", "rank")}
    assert not any("light import" in f["message"] for f in findings)


def test_pb_refuses_a_session_that_is_no_import_and_leaves_a_full_one_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = _trace("import-cpu-gloo")
    assert main(["import", str(trace), "--out", str(tmp_path / "full")]) == 0
    before = _files(_session(tmp_path / "full"))
    capsys.readouterr()
    assert main(["import", "--pb", str(tmp_path / "full")]) == 0
    assert "has its packet files already" in capsys.readouterr().out
    assert _files(_session(tmp_path / "full")) == before
    # A session whose trace_info.pb names no import source (a capture) is refused by name
    session = _session(tmp_path / "full")
    info = ti.read_trace_info(session)
    info.ClearField("import_source")
    ti.write_trace_info(session, info)
    assert main(["import", "--pb", str(session)]) == 1
    assert f"FAILED {session}: {session}: not an imported session" in capsys.readouterr().out
    assert main(["import", "--pb", str(tmp_path / "nothing")]) == 2
    assert main(["import", str(trace)]) == 2  # --out is needed to import


def test_the_cache_links_an_uncompressed_trace_and_writes_no_packet_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN an uncompressed trace (the public DLRM rank 0, decompressed)
    source = next((DATA / "dlrm_8rank").glob("worker0_*.json.gz"))
    trace = tmp_path / "worker0.json"
    trace.write_bytes(gzip.decompress(source.read_bytes()))
    profile = trace_cache.profile_for([trace])
    session = _session(profile)
    # THEN its session holds the trace itself (a link where the file system has them, not a copy)
    copy = session / layout.TRACE_JSON
    assert copy.read_bytes() == trace.read_bytes()
    if os.stat(trace).st_nlink > 1:
        assert copy.samefile(trace)
    assert sorted(p.name for p in session.iterdir()) == [layout.TRACE_JSON, layout.TRACE_INFO]
    info = ti.read_trace_info(session)
    assert light_session.is_light(info)
    assert info.import_source.sha256 == sha256_of(trace) == info.files[0].sha256
    # AND summary reads it
    assert main(["summary", str(trace), "--json", "--only", "overview"]) == 0
    overview = json.loads(capsys.readouterr().out)["analyses"]["overview"]["rows"]
    assert [row["rank"] for row in overview] == [0]


def test_a_link_falls_back_to_a_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = tmp_path / "t.json"
    shutil.copyfile(_trace("import-cpu-gloo"), tmp_path / "t.json.gz")
    trace.write_bytes(gzip.decompress((tmp_path / "t.json.gz").read_bytes()))

    def no_link(*_: Any) -> None:
        raise OSError("cross-device link")

    monkeypatch.setattr(light_session.os, "link", no_link)
    monkeypatch.setattr(light_session, "clone_file", lambda *_: False)
    session = _session(trace_cache.profile_for([trace]))
    copy = session / layout.TRACE_JSON
    assert not copy.samefile(trace) and copy.read_bytes() == trace.read_bytes()


@pytest.mark.skipif(not PUBLIC_TRACE.is_file(), reason="the public trace corpus is not here")
def test_the_largest_public_trace_with_flows_light_then_pb(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    trace = Path(shutil.copy(PUBLIC_TRACE, tmp_path / PUBLIC_TRACE.name))
    session, _ = _light_then_pb(trace, tmp_path / "light", capsys)
    assert main(["import", str(trace), "--out", str(tmp_path / "full")]) == 0
    full = _session(tmp_path / "full")
    assert _files(session) == _files(full)
    assert _info_apart_from_out_dir(session) == _info_apart_from_out_dir(full)


def test_pb_refuses_a_trace_that_changed_since_its_import(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # GIVEN a light session whose trace.json changed after the import (one byte, then its length)
    trace = _trace("import-cuda-multi-stream")
    assert main(["import", str(trace), "--out", str(tmp_path), "--no-pb"]) == 0
    session = _session(tmp_path)
    copy = session / layout.TRACE_JSON
    text = copy.read_bytes()
    at = text.index(b'"ts"')
    copy.write_bytes(text[:at] + b'"tS"' + text[at + 4 :])
    capsys.readouterr()
    # THEN --pb writes nothing and says why, naming the file
    assert main(["import", "--pb", str(session)]) == 1
    out = capsys.readouterr().out
    assert f"{copy}: SHA-256 differs from the manifest" in out and "import it again" in out
    copy.write_bytes(text + b"\n")
    assert main(["import", "--pb", str(session)]) == 1
    assert f"{copy}: {len(text) + 1} bytes, {len(text)} in the manifest" in capsys.readouterr().out
    assert sorted(p.name for p in session.iterdir()) == [layout.TRACE_JSON, layout.TRACE_INFO]
    assert light_session.is_light(ti.read_trace_info(session))
    assert not list(tmp_path.rglob("*.tmp"))


def test_a_light_import_does_not_import_the_conversion(tmp_path: Path) -> None:
    """Opening a raw trace (the default light import) needs none of the packet-file conversion:
    its modules, and the wire encoder's tables they build, stay out of the process."""
    import subprocess
    import sys

    trace = tmp_path / "trace.json"
    shutil.copy(_trace("import-cpu-gloo"), trace)
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from kinetoscope.importer import trace_cache\n"
        "from kinetoscope.format.session_files import session_dir\n"
        f"profile = trace_cache.profile_for([Path({str(trace)!r})])\n"
        "assert session_dir.find_sessions(profile)\n"
        "conversion = ('kinetoscope.convert.session_traces', 'kinetoscope.format.perfetto_packets.wire')\n"
        "print(sorted(m for m in sys.modules if m in conversion))"
    )
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src"), "PATH": "/usr/bin:/bin"}
    found = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"

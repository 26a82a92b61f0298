"""trace_info.pb: round trip, unknown fields, newer major versions, manifest."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinetoscope import FormatError
from kinetoscope.format.perfetto_packets.perfetto import FORMAT_MAJOR
from kinetoscope.format.session_files import trace_info as ti


def sample_info() -> ti.TraceInfo:
    info = ti.new_trace_info()
    info.state = ti.SessionState.SESSION_STATE_COMPLETE
    info.identity.session_id = "host_pid_1/20260101T000000.000000Z_000"
    info.identity.rank = 3
    info.identity.world_size = 4
    info.config.modes.extend([ti.Mode.MODE_DEVICE, ti.Mode.MODE_CPU_UTIL])
    info.drops.add(device=1, kept=10, total=15)
    info.files.add(name="trace.json", size_bytes=12, sha256="ab")
    return info


def test_round_trip(tmp_path: Path) -> None:
    info = sample_info()
    ti.write_trace_info(tmp_path, info)
    assert ti.read_trace_info(tmp_path) == info
    assert ti.read_trace_info(tmp_path / "trace_info.pb") == info
    assert not list(tmp_path.glob("*.tmp"))


def test_unknown_fields_are_ignored(tmp_path: Path) -> None:
    data = sample_info().SerializeToString() + b"\xf8\x3e\x01"  # field 1000, varint 1
    (tmp_path / "trace_info.pb").write_bytes(data)
    assert ti.read_trace_info(tmp_path).identity.rank == 3


def test_newer_major_version_is_refused_with_the_remedy(tmp_path: Path) -> None:
    info = sample_info()
    info.format_major = FORMAT_MAJOR + 1
    ti.write_trace_info(tmp_path, info)
    with pytest.raises(FormatError, match="upgrade kinetoscope"):
        ti.read_trace_info(tmp_path)


def test_garbage_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "trace_info.pb").write_bytes(b"\xff\xff\xff")
    with pytest.raises(FormatError, match=r"trace_info\.pb"):
        ti.read_trace_info(tmp_path)


def test_manifest_lists_finished_files_only(tmp_path: Path) -> None:
    (tmp_path / "trace.json").write_text("{}")
    (tmp_path / "cpu_util.pb.partial").write_bytes(b"x")
    (tmp_path / "ntrace.pb.tmp").write_bytes(b"x")
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.cpp").write_text("int x;")
    ti.write_trace_info(tmp_path, sample_info())
    entries = ti.build_manifest(tmp_path)
    assert [e.name for e in entries] == ["kernels/k.cpp", "trace.json"]
    assert entries[1].size_bytes == 2
    assert entries[1].sha256 == "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"


def test_a_state_or_mode_number_this_version_does_not_know_reads_as_unknown() -> None:
    assert ti.state_name(99) == "UNKNOWN(99)" and ti.mode_name(-5) == "UNKNOWN(-5)"
    assert ti.state_name(ti.SessionState.SESSION_STATE_COMPLETE) == "COMPLETE"

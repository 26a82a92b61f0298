"""The status of each file a session's manifest lists, as ingest's ``files`` table and verify see it."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinetoscope.sessions.file_status import OUTSIDE, file_status


@pytest.fixture
def session(tmp_path: Path) -> Path:
    folder = tmp_path / "session"
    folder.mkdir()
    (folder / "trace.json").write_bytes(b"x" * 10)
    (folder / "device_0.pb.partial").write_bytes(b"x" * 4)
    (tmp_path / "secret").write_bytes(b"x" * 10)
    (folder / "linked").symlink_to(tmp_path / "secret")
    return folder


@pytest.mark.parametrize(
    ("name", "listed_bytes", "expected"),
    [
        ("trace.json", 10, ("ok", 10)),
        ("trace.json", 12, ("truncated", 10)),
        ("trace.json", 8, ("corrupt", 10)),
        ("device_0.pb", 9, ("partial", 4)),
        ("gone.json", 3, ("missing", -1)),
        ("../secret", 10, (OUTSIDE, -1)),
        ("linked", 10, (OUTSIDE, -1)),
        ("x" * 4096, 1, (OUTSIDE, -1)),
    ],
)
def test_each_listed_file_has_one_status(
    session: Path, name: str, listed_bytes: int, expected: tuple[str, int]
) -> None:
    assert file_status(session, name, listed_bytes) == expected

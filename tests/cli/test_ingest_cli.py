"""``kinetoscope ingest`` as a process of its own: its malloc settings."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from kinetoscope import _freed_memory
from kinetoscope.cli import main


def test_ingest_maps_large_blocks_on_their_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN an empty profile tree, the command's mallopt calls recorded
    asked: list[int] = []
    monkeypatch.setattr(_freed_memory, "map_large_blocks", lambda: asked.append(1) or True)
    (tmp_path / "profile").mkdir()
    # WHEN it is ingested from the command line (``kinetoscope ingest ...``: main reads sys.argv)
    monkeypatch.setattr(sys, "argv", ["kinetoscope", "ingest", str(tmp_path / "profile"), "--out",
                                      str(tmp_path / "ds"), "--quiet"])  # fmt: skip
    main()
    # THEN the command asked once that a session-wide step's blocks go back to the system once freed
    assert asked == [1]


def test_ingest_called_by_a_program_leaves_malloc_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[int] = []
    monkeypatch.setattr(_freed_memory, "map_large_blocks", lambda: asked.append(1) or True)
    (tmp_path / "profile").mkdir()
    # WHEN a program (a notebook, a test) calls the command in its own process
    main(["ingest", str(tmp_path / "profile"), "--out", str(tmp_path / "ds"), "--quiet"])
    # THEN the process's glibc settings stay the program's
    assert asked == []

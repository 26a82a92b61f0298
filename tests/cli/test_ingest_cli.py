"""``kinetoscope ingest`` as a process of its own: its malloc settings."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinetoscope import _freed_memory
from kinetoscope.cli import main


def test_ingest_maps_large_blocks_on_their_own(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN an empty profile tree, the command's mallopt calls recorded
    asked: list[int] = []
    monkeypatch.setattr(_freed_memory, "map_large_blocks", lambda: asked.append(1) or True)
    (tmp_path / "profile").mkdir()
    # WHEN it is ingested
    main(["ingest", str(tmp_path / "profile"), "--out", str(tmp_path / "ds"), "--quiet"])
    # THEN the command asked once that a session-wide step's blocks go back to the system once freed
    assert asked == [1]

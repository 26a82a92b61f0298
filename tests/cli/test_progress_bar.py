"""The terminal bar of ``kinetoscope ingest``: sessions as they end, and how far the one being read is."""

from __future__ import annotations

from typing import Any

from kinetoscope.cli.progress import Bar, progress_bar


class _Drawn:
    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []

    def update(self, task: int, **fields: Any) -> None:
        self.updates.append({"task": task, **fields})


def test_reading_says_how_far_and_keeps_the_sessions_count() -> None:
    drawn = _Drawn()
    bar = Bar((drawn, 7))
    bar.reading("rank0/session", 300 << 20, 1000 << 20)
    bar(1, 3, "rank0/session")
    bar.reading("rank1/session", 5 << 20, 10 << 20)
    first, ended, second = drawn.updates
    reading = "rank0/session: 300.0 of 1,000.0 MiB read"
    assert first == {"task": 7, "completed": 0, "total": None, "description": reading, "refresh": True}
    assert (ended["completed"], ended["total"], ended["description"]) == (1, 3, "rank0/session")
    later = (second["completed"], second["total"], second["description"])
    assert later == (1, 3, "rank1/session: 5.0 of 10.0 MiB read")


def test_without_a_terminal_nothing_is_drawn(capsys: Any) -> None:
    with progress_bar("ingest") as bar:  # pytest's stderr is no terminal
        bar(1, 2, "a")
        bar.reading("a", 1, 2)
    assert capsys.readouterr().err == ""

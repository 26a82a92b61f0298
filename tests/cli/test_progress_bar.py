"""The terminal bar of ``kinetoscope ingest``: sessions as they end, and how far the one being read is."""

from __future__ import annotations

import io
import sys
from pathlib import Path
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
    assert first == {"task": 7, "completed": 0.3, "total": None, "description": reading, "refresh": True}
    assert (ended["completed"], ended["total"], ended["description"]) == (1.0, 3, "rank0/session")
    later = (second["completed"], second["total"], second["description"])
    assert later == (1.5, 3, "rank1/session: 5.0 of 10.0 MiB read")  # through the second of three


def test_without_a_terminal_nothing_is_drawn(capsys: Any) -> None:
    with progress_bar("ingest") as bar:  # pytest's stderr is no terminal
        bar(1, 2, "a")
        bar.reading("a", 1, 2)
    assert capsys.readouterr().err == ""


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_bar_draws_on_stderr_not_on_the_commands_output(monkeypatch: Any, capsys: Any) -> None:
    """``summary TRACE --json > out.json`` on a terminal: the bar goes to stderr, the JSON stays clean."""
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with progress_bar("ingest") as bar:
        bar.reading("rank0/session", 3 << 20, 8 << 20)
        bar(1, 1, "rank0/session")
    assert "3.0 of 8.0 MiB read" in terminal.getvalue()
    assert capsys.readouterr().out == ""


def test_a_dataset_opens_without_a_bar_and_a_profile_is_ingested_with_one(tmp_path: Path, monkeypatch: Any) -> None:
    from kinetoscope.cli import sources
    from kinetoscope.report import opening

    from ..ingest.helpers import import_scenario

    profile = import_scenario("import-cpu-gloo", tmp_path / "prof")
    calls: list[tuple[Any, ...]] = []
    opened = opening.open_dataset

    def recorded(path: Any, *follow: Any) -> Any:
        calls.append((path, *follow))
        return opened(path, *follow)

    monkeypatch.setattr(opening, "open_dataset", recorded)
    with sources.opened_dataset(profile) as found:
        dataset_path = found.path
    with sources.opened_dataset(dataset_path):
        pass
    (ingested, progress, reading), (again,) = calls
    assert ingested == profile and again == dataset_path
    assert callable(progress) and reading.__name__ == "reading"

"""``open_dataset`` ingests a profile tree first; what the ingest has to say goes to standard error,
or to the caller's ``say`` (the viewer's log), which also hears what was ingested where."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinetoscope.report.opening import open_dataset
from kinetoscope.viewer.indexing.source import resolve_dataset

from ..ingest.helpers import import_scenario


def test_a_profile_tree_is_ingested_and_the_caller_hears_of_it(tmp_path: Path) -> None:
    profile = import_scenario("import-cpu-gloo", tmp_path / "prof")
    heard: list[str] = []
    with resolve_dataset(profile, say=heard.append) as dataset:
        assert dataset.rows("events") > 0
    assert heard[0].startswith(f"ingesting {profile} into ")
    assert heard[-1].startswith("ingested 1 session(s), 0 unchanged")
    heard.clear()
    with open_dataset(profile, say=heard.append):  # again: nothing changed
        pass
    assert heard[-1].startswith("ingested 0 session(s), 1 unchanged")


def test_without_say_only_what_matters_reaches_standard_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    profile = import_scenario("import-cpu-gloo", tmp_path / "prof")
    with open_dataset(profile):
        pass
    captured = capsys.readouterr()
    assert captured.out == "" and "ingesting" not in captured.err


def test_a_missing_path_is_a_clear_error(tmp_path: Path) -> None:
    from kinetoscope import CommandError

    with pytest.raises(CommandError, match="no such file or directory"):
        resolve_dataset(tmp_path / "nothing")

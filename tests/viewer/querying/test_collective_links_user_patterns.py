"""The viewer's collective links pair a user's own communication kernels (``--categories``) as the
summary's ``matched_collectives`` does."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from kinetoscope.cli import output_of
from kinetoscope.cli.environment import CATEGORIES_ENV, from_environment
from kinetoscope.query.collective_rows import collective_tables
from kinetoscope.query.dataset import Dataset
from kinetoscope.viewer.querying.collective_links import CollectiveLinks
from tests.truth.cases import user_comm_pattern_window_shift as case


def _dataset(tmp_path: Path) -> Path:
    case.build(tmp_path)
    output_of(["import", str(tmp_path / "traces"), "--out", str(tmp_path / "profile")])
    output_of(["ingest", str(tmp_path / "profile"), "--out", str(tmp_path / "dataset"), "--jobs", "1", "--quiet"])
    return tmp_path / "dataset"


def _patterns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "categories.json"
    path.write_text(json.dumps(case.PATTERNS))
    monkeypatch.setenv(CATEGORIES_ENV, str(path))


def test_collective_rows_hold_the_user_s_kernels_only_with_their_patterns(tmp_path: Path) -> None:
    # GIVEN four ranks whose only collectives are the user's own dispatch kernels
    dataset = _dataset(tmp_path)
    with Dataset(dataset) as opened:
        # WHEN the collective rows are read without and with the user's pattern
        without = collective_tables(opened)["events"].num_rows
        rows = collective_tables(opened, user_patterns=tuple(case.PATTERNS["communication"]))["events"]
    # THEN only the pattern brings them: 3 ranks x 4 dispatches and rank 2's 3
    assert without == 0
    assert rows.num_rows == 3 * 4 + 3 and set(rows.column("name").to_pylist()) == {case.KERNEL}


def test_viewer_links_pair_them_as_the_summary_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN the same dataset and the user's category file in effect
    dataset = _dataset(tmp_path)
    _patterns(tmp_path, monkeypatch)
    summary: Any = json.loads(output_of(["summary", str(dataset), "--json", "--only", "matched_collectives"]))
    instances = summary["analyses"]["matched_collectives"]["rows"]
    links = CollectiveLinks(SimpleNamespace(dataset=SimpleNamespace(path=dataset), t0_ns=0))  # type: ignore[arg-type]
    # WHEN the viewer is asked for each instance by its example event
    with from_environment():  # as `kinetoscope view` runs under the command line's settings
        found = [links.instance(int(row["example_id"])) for row in instances]
    # THEN it finds the same instances, on the same ranks, all-to-alls by aligned order
    assert [len(f["ranks"]) for f in found] == [row["ranks"] for row in instances]
    assert sorted(row["ranks"] for row in instances) == [3, 4, 4, 4]
    assert {f["collective"] for f in found} == {"alltoall"}
    assert [f["latency_ns"] for f in found] == [row["latency_ns"] for row in instances]

"""The summary in one screen (render/summary_screen.py): on a real single-rank trace and on the real
8-rank DLRM set it fits 100 columns and 60 lines, says what ran, the step time, the device time
split and its denominator, the findings grouped across ranks, the top kernels and ops, memory, the
sections it left out and why, and how to see the others (made only when asked); --all and --section keep whole sections
without turning a table into one column per rank."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kinetoscope.cli import main

from ..ingest.helpers import ingested_scenario

WIDTH, HEIGHT = 100, 60


@pytest.fixture(scope="module", params=["import-cuda-alexnet", "dlrm_8rank", "import-cpu-gloo"])
def dataset(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ingested_scenario(request.param, tmp_path_factory.mktemp(request.param))


def summary(dataset: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, *flags: str) -> str:
    """``kinetoscope summary ds`` as a user runs it beside the dataset."""
    monkeypatch.chdir(dataset.parent)
    capsys.readouterr()
    assert main(["summary", "ds", *flags]) == 0
    return capsys.readouterr().out


def test_the_summary_fits_one_screen(
    dataset: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = summary(dataset, capsys, monkeypatch).splitlines()
    assert len(lines) <= HEIGHT and max(len(line) for line in lines) <= WIDTH, (len(lines), lines)
    text = "\n".join(lines)
    ranks = 8 if dataset.parent.name.startswith("dlrm") else 1
    assert lines[0].startswith(f"Ran: {ranks} rank") and lines[1].startswith("Step time: ")
    if dataset.parent.name.startswith("import-cpu"):  # a CPU-only gloo rank
        assert " on the host only; 1 step;" in lines[0] and lines[2] == "Device time: no device activity"
        assert "no device activity (top_kernels, " in text and "Top kernels" not in text
    else:
        assert "Device time, share of the device span (first to last device work;" in text
        assert "exposed communication" in text and "idle" in text and "Top kernels by device time" in text
    assert "Top ops and annotations by host self time" in text
    assert re.search(r"^Memory: ", text, re.M)
    flat = " ".join(line.strip() for line in lines)  # the paragraphs as one line, not as wrapped
    assert re.search(r"More: --section NAME .*; computed on demand: .*cuda_graph_replays", flat)
    assert "--all every section" in text
    assert re.search(r"^   kinetoscope view ds --at [0-9.]+-[0-9.]+ --event -?\d+$", text, re.M)
    assert "token" not in text and "?page=" not in text


def test_eight_ranks_show_each_finding_once_with_its_rank_count(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    text = summary(ingested_scenario("dlrm_8rank", tmp_path), capsys, monkeypatch)
    assert "Findings (8, from 42 findings on 8 ranks" in text
    assert "on 8 of 8 ranks, 1.6-11.1 ms per step" in text  # comm_not_overlapped, rank 1 the worst
    assert len(re.findall(r"\(comm_not_overlapped\)", text)) == 1
    assert "summed over 8 ranks" in text and "8 x Tesla V100-SXM2-32GB" in text


def test_all_and_sections_keep_whole_tables_never_one_column_per_rank(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    dataset = ingested_scenario("dlrm_8rank", tmp_path)
    every = summary(dataset, capsys, monkeypatch, "--all")
    assert "Achieved FLOP/s and bytes/s per op and shape, against the roofline (1 of" in every
    assert not re.search(r"rank 0 .*rank 1", every)  # no column headed per rank
    assert max(len(line) for line in every.splitlines() if "kinetoscope view" not in line) <= WIDTH
    one = summary(dataset, capsys, monkeypatch, "--section", "stragglers")
    assert one.startswith("Straggler") and "Findings" not in one
    found = summary(dataset, capsys, monkeypatch, "--section", "findings")
    assert found.startswith("Findings (8, from 42 findings on 8 ranks") and "Per rank" not in found
    assert main(["summary", "ds", "--section", "nope"]) != 0


def test_the_screen_makes_only_what_it_shows_and_every_finding(tmp_path: Path) -> None:
    # GIVEN the real 8-rank DLRM set
    from kinetoscope.query import Dataset
    from kinetoscope.render.summary_screen import SHOWN
    from kinetoscope.report.runner import made
    from kinetoscope.report.settings import ReportOptions

    dataset = Dataset(ingested_scenario("dlrm_8rank", tmp_path))
    # WHEN the one screen is made, and every section
    screen, every = made(dataset, ReportOptions(), screen=True), made(dataset, ReportOptions())
    # THEN the screen made the analyses it shows, with the same tables, and named the others
    assert sorted(screen.results) == sorted(SHOWN)
    assert all(screen.results[name].equals(every.results[name]) for name in SHOWN)
    assert sorted((*screen.results, *screen.on_demand)) == sorted(every.results) and not every.on_demand
    # AND its findings are every finding of every rule
    assert screen.found is not None and screen.found == every.found

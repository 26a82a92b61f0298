"""``kinetoscope summary``: ``--top`` reaches the ranked analyses only, ``--threads`` changes no value, and the
command stays light."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from kinetoscope.cli import main

from ..conftest import PYTHON, python_env
from ..ingest.helpers import ingested_scenario


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return ingested_scenario("dlrm_8rank", tmp_path_factory.mktemp("summary"))


def _analyses(dataset: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> dict[str, list[dict[str, object]]]:
    capsys.readouterr()
    assert main(["summary", str(dataset), "--json", *flags]) == 0
    return {name: section["rows"] for name, section in json.loads(capsys.readouterr().out)["analyses"].items()}


def test_top_cuts_the_ranked_analyses_and_no_other(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    one, many = _analyses(dataset, capsys, "--top", "1"), _analyses(dataset, capsys, "--top", "1000")
    assert len(one["top_kernels"]) == 8 < len(many["top_kernels"])  # one row per rank
    assert len(one["top_ops"]) == 8 < len(many["top_ops"])
    for name in ("overview", "memory_operations", "kernel_type_breakdown", "time_by_category", "step_times"):
        assert one[name] == many[name], name


def test_top_is_not_negative(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(dataset), "--top", "-1"]) != 0
    assert "--top must be 0 or more" in capsys.readouterr().err


def _document(dataset: Path, capsys: pytest.CaptureFixture[str], *flags: str) -> str:
    capsys.readouterr()
    assert main(["summary", str(dataset), "--json", *flags]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("window", [(), ("--steady-state",), ("--window-launched-only",)])
def test_threads_change_no_value(
    dataset: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, window: tuple[str, ...]
) -> None:
    # GIVEN the 8-rank dataset; WHEN summary runs its analyses and findings in one thread and in
    # three (asked for: threaded although small)
    one = _document(dataset, capsys, "--threads", "1", *window)
    three = _document(dataset, capsys, "--threads", "3", *window)
    # THEN the documents are the same, findings and every analysis
    assert one == three
    assert json.loads(one)["findings"] is not None


def test_threads_are_one_or_more(dataset: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["summary", str(dataset), "--threads", "0"]) != 0
    assert "--threads must be 1 or more" in capsys.readouterr().err


def test_summary_imports_neither_torch_nor_pandas(dataset: Path) -> None:
    code = (
        "import sys\nfrom kinetoscope.cli import main\n"
        f"main(['summary', {str(dataset)!r}, '--json'])\n"
        "print(sorted(m for m in ('torch', 'pandas') if m in sys.modules), file=sys.stderr)"
    )
    done = subprocess.run([PYTHON, "-c", code], env=python_env(), capture_output=True, text=True, check=True)
    assert done.stderr.strip().splitlines()[-1] == "[]"

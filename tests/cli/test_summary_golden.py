"""``kinetoscope summary --json`` as a whole, held to the document it printed when each file of
``tests/cli/summary_golden`` was written: every analysis and finding, on real traces (DLRM over 8
NCCL ranks, a CPU gloo rank, a CUDA AlexNet step) and on a generated 4-rank training trace set.

A change that means to change a figure rewrites the files with ``KINETOSCOPE_UPDATE_GOLDEN=1``
(and the diff shows what changed); a change that only makes the summary faster leaves them as
they are. Floats are compared to 1e-9 relative, so a sum taken in another order still matches."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.cli import main

from ..conftest import PYTHON, REPO, python_env
from ..ingest.helpers import import_scenario

GOLDEN = Path(__file__).parent / "summary_golden"
SCENARIOS = ("dlrm_8rank", "import-cpu-gloo", "import-cuda-alexnet")


def _ingested(profile: Path, out: Path) -> Path:
    assert main(["ingest", str(profile), "--out", str(out)]) == 0
    return out


def _summary(dataset: Path, capsys: pytest.CaptureFixture[str]) -> Any:
    capsys.readouterr()
    assert main(["summary", str(dataset), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _differences(found: Any, expected: Any, where: str = "") -> list[str]:
    """Where ``found`` differs from ``expected`` (floats to 1e-9 relative), at most a few places."""
    if isinstance(expected, dict) and isinstance(found, dict):
        if list(found) != list(expected):
            return [f"{where}: keys {list(found)} != {list(expected)}"]
        return [d for key in expected for d in _differences(found[key], expected[key], f"{where}.{key}")]
    if isinstance(expected, list) and isinstance(found, list):
        if len(found) != len(expected):
            return [f"{where}: {len(found)} items != {len(expected)}"]
        pairs = enumerate(zip(found, expected, strict=True))
        return [d for i, (one, other) in pairs for d in _differences(one, other, f"{where}[{i}]")]
    if isinstance(expected, float) and isinstance(found, (int, float)) and not isinstance(found, bool):
        both_nan = math.isnan(found) and math.isnan(expected)
        same = both_nan or math.isclose(found, expected, rel_tol=1e-9, abs_tol=1e-12)
        return [] if same else [f"{where}: {found!r} != {expected!r}"]
    return [] if found == expected and type(found) is type(expected) else [f"{where}: {found!r} != {expected!r}"]


def _check(name: str, document: Any) -> None:
    path = GOLDEN / f"{name}.json"
    if os.environ.get("KINETOSCOPE_UPDATE_GOLDEN") == "1":
        path.write_text(json.dumps(document, indent=1, sort_keys=False) + "\n")
    assert path.exists(), f"{path} is missing: write it with KINETOSCOPE_UPDATE_GOLDEN=1"
    differences = _differences(document, json.loads(path.read_text()))
    heading = f"summary --json differs from {path.name} (KINETOSCOPE_UPDATE_GOLDEN=1 rewrites it):"
    assert not differences, "\n".join([heading, *differences[:20]])


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_summary_of_a_real_trace_is_the_golden_one(
    scenario: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a real trace set, imported and ingested
    dataset = _ingested(import_scenario(scenario, tmp_path / "prof"), tmp_path / "ds")
    # WHEN the whole summary runs, THEN it prints the document it printed before
    _check(scenario, _summary(dataset, capsys))


def test_summary_of_a_generated_multi_rank_set_is_the_golden_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN a generated 4-rank CUDA training trace set (fixed seed), imported and ingested
    generator = REPO / "benchmarks" / "gen_multirank_trace.py"
    argv = [PYTHON, str(generator), str(tmp_path / "traces"), "--ranks", "4", "--mb-per-rank", "0.3"]
    subprocess.run(argv, env=python_env(), check=True, capture_output=True)
    assert main(["import", str(tmp_path / "traces"), "--out", str(tmp_path / "prof")]) == 0
    dataset = _ingested(tmp_path / "prof", tmp_path / "ds")
    # WHEN the whole summary runs, THEN it prints the document it printed before
    _check("generated_4rank", _summary(dataset, capsys))

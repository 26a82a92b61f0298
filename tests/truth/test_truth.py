"""Every labelled case through the real import, ingest, summary, findings and verify."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.truth.harness import case_names, load_case, run_case


@pytest.mark.parametrize("name", case_names())
def test_case(name: str, tmp_path: Path) -> None:
    # GIVEN a trace built from what its situation is, with an independent count of its numbers
    case = load_case(name)
    # WHEN it goes through import, ingest, summary, findings and verify
    outcome = run_case(case, tmp_path)
    # THEN every number, expected and forbidden finding and verify problem is as labelled
    assert outcome.passed, f"{name} ({case.situation}):\n  " + "\n  ".join(outcome.failures)

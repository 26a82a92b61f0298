"""Every trace of the public corpus imports without an error (skipped when ../shared is absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kinetoscope.cli import main
from kinetoscope.format.session_files import session_dir as layout
from kinetoscope.format.session_files import trace_info as ti
from kinetoscope.importer.trace_import import find_trace_files

from ..conftest import SHARED
from .test_import_cli import input_flows, output_counts

CORPUS = SHARED / "datasets" / "public-traces"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CORPUS.is_dir(), reason=f"{CORPUS} is not present"),
]


def test_every_public_trace_imports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # WHEN the whole corpus directory is imported in one command
    assert main(["import", str(CORPUS), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "FAILED" not in out
    # THEN every trace became a complete session, and no launch flow of the input was lost
    by_source = {}
    for session in layout.find_sessions(tmp_path):
        info = ti.read_trace_info(session)
        assert ti.state_name(info.state) == "COMPLETE"
        by_source[Path(info.import_source.path)] = session
    traces = [p for p in find_trace_files([CORPUS]) if f"{p}: not a torch.profiler trace" not in out]
    assert sorted(by_source) == sorted(traces)
    for trace, session in by_source.items():
        assert output_counts(session)[2] >= input_flows(trace), trace

"""``kinetoscope.open(path)``: the commands' summary, findings and diff from Python, as Arrow tables
and documents, and shown in a real Jupyter kernel."""

from __future__ import annotations

import concurrent.futures
import contextlib
import importlib.util
import io
import json
import shutil
from pathlib import Path

import pytest

import kinetoscope
from kinetoscope.cli import main

from ..conftest import REPO
from ..viewer.helpers import CHROMIUM, CHROMIUM_ARGS

REAL_TRACE = REPO / "tests" / "data" / "import-cuda-alexnet" / "benchmark_result_2869224_1695835535_trace.json.gz"


def cli_json(*argv: str) -> dict[str, object]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(list(argv)) in (0, 1)
    document: dict[str, object] = json.loads(out.getvalue())
    return document


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real CUDA trace recorded by others (tests/data/import-cuda-alexnet), in a folder of its own."""
    copy = tmp_path_factory.mktemp("nb") / REAL_TRACE.name
    shutil.copy(REAL_TRACE, copy)
    return copy


def test_open_gives_the_commands_summary_and_findings(trace: Path) -> None:
    with kinetoscope.open(trace) as profile:
        # the dataset's own API is still there
        counted = profile.sql("SELECT count(*) AS n FROM events").column("n")[0].as_py()
        assert profile.table("events").num_rows == counted
        summary = profile.summary()
        findings = profile.findings()
    # every section is the rows `summary --json` prints, as an Arrow table
    printed = cli_json("summary", str(trace), "--json")
    analyses = printed["analyses"]
    assert isinstance(analyses, dict)
    for name in ("overview", "top_kernels", "temporal_breakdown"):
        assert summary.section(name).num_rows == len(analyses[name]["rows"])
    kernels = summary.section("top_kernels").to_pylist()
    assert [k["total_ns"] for k in kernels] == [k["total_ns"] for k in analyses["top_kernels"]["rows"]]
    assert findings.document == cli_json("findings", str(trace), "--json")
    assert findings.table.num_rows == len(findings.items)
    assert summary.findings.items == findings.items
    assert "Findings" in str(summary)
    with pytest.raises(KeyError, match="the sections are"):
        summary.section("nope")


def test_to_pandas_says_how_to_get_pandas(trace: Path) -> None:
    if importlib.util.find_spec("pandas") is not None:
        pytest.skip("pandas is installed here")
    with kinetoscope.open(trace) as profile, pytest.raises(ImportError, match="pip install pandas"):
        profile.summary().to_pandas("overview")


@pytest.mark.slow
def test_a_notebook_renders_the_summary_of_a_real_trace(trace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    monkeypatch.setenv("PYTHONPATH", str(REPO / "src"))
    # GIVEN a notebook that opens the trace and shows its summary and findings
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(f"import kinetoscope\nprofile = kinetoscope.open({str(trace)!r})"),
        nbformat.v4.new_code_cell("summary = profile.summary()\nsummary"),
        nbformat.v4.new_code_cell("profile.findings()"),
        nbformat.v4.new_code_cell("summary.section('top_kernels').num_rows"),
    ])  # fmt: skip
    # WHEN a real kernel runs it
    client = nbclient.NotebookClient(notebook, timeout=240, kernel_name="python3")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # no event loop of a browser test in its way
        pool.submit(client.execute).result()
    # THEN the summary shows as the report page in a sandboxed frame, the findings as a list
    shown = notebook.cells[1].outputs[0]["data"]
    assert 'sandbox="allow-scripts"' in shown["text/html"] and "report-data" in shown["text/html"]
    assert "Findings" in shown["text/plain"] or "Summary" in shown["text/plain"]
    assert notebook.cells[2].outputs[0]["data"]["text/html"].startswith(("<ol>", "<p>"))
    with kinetoscope.open(trace) as profile:
        want = profile.summary().section("top_kernels").num_rows
    assert notebook.cells[3].outputs[0]["data"]["text/plain"] == str(want)
    # AND that HTML, as a notebook page shows it, draws the charts inside its frame
    pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        pytest.skip(f"Chromium not found at {CHROMIUM}")
    page_file = trace.parent / "cell.html"
    page_file.write_text(f"<!doctype html><html><body>{shown['text/html']}</body></html>")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:  # Playwright's sync API wants a thread without a loop
        assert pool.submit(charts_in_frame, page_file).result() >= 3


def charts_in_frame(page_file: Path) -> int:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto(page_file.as_uri())
        frame = page.frame_locator("iframe")
        frame.locator("html[data-idle='true']").wait_for(timeout=15_000)
        count = int(frame.locator("#charts figure.bars").count())
        browser.close()
    return count

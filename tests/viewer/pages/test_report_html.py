"""`kinetoscope report`: one self-contained HTML file, opened offline in Chromium, that shows the
answer, the findings, the charts and every analysis, with every string from the trace as text."""

from __future__ import annotations

import getpass
import json
from pathlib import Path
from typing import Any

import pytest

from kinetoscope.cli import main, output_of
from kinetoscope.viewer.pages import report_html

from ...kineto_gen import HOSTILE_NAME, TrainingSpec, write_profile
from ..helpers import ARTIFACTS


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A report of a two-rank profile whose ops and kernels carry HTML markup for names."""
    profile = tmp_path_factory.mktemp("report") / "hostile-run"
    write_profile(profile, TrainingSpec(run="hostile-run", ranks=2, steps=3, layers=3, hostile=True))
    out = profile.parent / "report.html"
    assert main(["report", str(profile), "-o", str(out)]) == 0
    return profile, out


def test_the_report_is_one_file_that_escapes_every_trace_string(report: tuple[Path, Path]) -> None:
    _, out = report
    text = out.read_text()
    assert HOSTILE_NAME not in text and "<img" not in text  # its '<' is escaped inside the embedded data
    assert text.count("<script") == 2  # the data element and the one bundled script, nothing else
    assert not any(f'{attr}="http' in text or f"{attr}=http" in text for attr in ("src", "href"))
    assert "default-src 'none'" in text  # nothing loads from anywhere but the page itself


@pytest.mark.slow
def test_the_report_opens_offline_with_its_charts_and_sections(report: tuple[Path, Path], browser: Any) -> None:
    # GIVEN the report file, opened from disk with every network request refused
    _, out = report
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    requests: list[str] = []
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (errors.append(f"dialog: {d.message}"), d.dismiss()))
    page.route("**/*", lambda route: (requests.append(route.request.url), route.continue_()
                                      if route.request.url.startswith("file://") else route.abort()))  # fmt: skip
    page.goto(out.as_uri())
    page.wait_for_selector("html[data-idle='true']", timeout=15_000)
    # THEN it shows the answer, the findings, the charts and each analysis, folded sections included
    assert "Findings" in page.inner_text("#answer")
    assert page.locator("#charts figure.bars").count() >= 3
    assert page.locator("#analyses details.analysis-fold").count() >= 20
    assert page.locator("#findings li.finding").count() >= 1
    # AND the page scrolls as one document (the viewer's full-height layout does not hold the report)
    page.evaluate("window.scrollTo(0, 2000)")
    assert page.evaluate("window.scrollY") > 0
    # AND the hostile name is shown as text, ran nothing, and nothing was fetched from the network
    assert page.get_by_text(HOSTILE_NAME).count() >= 1
    assert errors == []
    assert all(url.startswith("file://") for url in requests)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report.png"), full_page=False)
    page.close()


def test_redact_leaves_out_paths_hosts_and_the_user(tmp_path: Path, report: tuple[Path, Path]) -> None:
    profile, _ = report
    out = tmp_path / "redacted.html"
    assert main(["report", str(profile), "-o", str(out), "--redact"]) == 0
    data = out.read_text().split('id="report-data">')[1].split("</script>")[0]
    assert str(profile.parent) not in data and "synthetic-host" not in data and getpass.getuser() not in data


def test_scrubbing_keeps_a_frames_file_name_and_drops_folders_hosts_and_users() -> None:
    secrets = {"/data/runs/exp7": "<path>", "gpu-node-17": "<host>", "alice": "<user>"}
    seen = {"frame": "/home/alice/proj/train.py(42): forward", "where": "/data/runs/exp7/rank0 on gpu-node-17",
            "op": "aten::mm", "list": ["alice's run", 3]}  # fmt: skip
    assert report_html.redacted(seen, secrets) == {
        "frame": "<path>/train.py(42): forward", "where": "<path>/rank0 on <host>", "op": "aten::mm",
        "list": ["<user>'s run", 3]}  # fmt: skip


def test_the_reports_answer_is_what_summary_prints(report: tuple[Path, Path]) -> None:
    # GIVEN the report of a profile, whose analyses ran once for the answer and the page alike
    profile, out = report
    text = out.read_text()
    start = text.index('id="report-data">') + len('id="report-data">')
    data = json.loads(text[start:text.index("</script>", start)])
    # THEN its one-screen answer is the one `kinetoscope summary` prints for the same profile
    assert data["answer"] == output_of(["summary", str(profile)])

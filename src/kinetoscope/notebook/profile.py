"""``kinetoscope.open(path)``: a profile tree, a dataset or raw torch.profiler traces, opened (and
ingested or imported when needed) as a ``Profile``: the dataset's tables and SQL, and the summary,
findings and diff the commands make."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from kinetoscope.cli import output_of
from kinetoscope.cli.locations import location
from kinetoscope.notebook.results import Diff, Findings, Summary
from kinetoscope.query.dataset import Dataset


class Profile:
    """An opened profile. Every attribute of its ``Dataset`` (``table``, ``sql``, ``tables``,
    ``ranks``, ``stream``, ...) is its own; ``summary()``, ``findings()`` and ``diff(other)`` add the
    commands' answers."""

    def __init__(self, dataset: Dataset, source: str) -> None:
        self.dataset = dataset
        self.source = source  # the path as given: the commands read it again for the text they print

    def __getattr__(self, name: str) -> Any:
        return getattr(self.dataset, name)

    def __enter__(self) -> Profile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.dataset.close()

    def close(self) -> None:
        self.dataset.close()

    def summary(self, top: int = 10) -> Summary:
        """Every analysis as an Arrow table (``top`` rows per rank in the ranked ones, as
        ``summary --top``), the findings, the text ``kinetoscope summary`` prints, and, in Jupyter,
        the Summary page's charts: the analyses and rules run once, by the summary's runner."""
        from kinetoscope.cli.environment import user_options
        from kinetoscope.cli.sources import view_target
        from kinetoscope.findings.document import document
        from kinetoscope.viewer.pages import report_html

        made = report_html.computed(self.dataset, top, user_options())
        text = report_html.answer(made, view_target([location(self.source)]))
        given = report_html.ReportInput(self.dataset, text, f"kinetoscope: {Path(self.source).name}")
        page = report_html.page(report_html.report_data(given, made))
        return Summary(made.results, Findings(document(made.found)), text, page)

    def findings(self) -> Findings:
        """The findings of ``kinetoscope findings``, with their numbers, evidence and remedies."""
        return Findings(json.loads(output_of(["findings", self.source, "--json"], (0, 1))))

    def diff(self, other: Profile | str | Path) -> Diff:
        """This run (the base) against ``other`` (the new run), as ``kinetoscope diff`` compares them."""
        new = other.source if isinstance(other, Profile) else str(other)
        report = json.loads(output_of(["diff", self.source, new, "--json"], (0, 1)))
        return Diff(report, output_of(["diff", self.source, new], (0, 1)))


def open_profile(path: str | Path) -> Profile:
    """A profile tree, a dataset, an ``s3://`` dataset, or torch.profiler traces (a ``.json[.gz]``
    file or a folder of them, imported once into a cache beside them)."""
    from kinetoscope.cli.sources import profile_path
    from kinetoscope.report.opening import open_dataset

    found = profile_path([location(str(path))])
    return Profile(open_dataset(found), str(path))


"""A report written as ``kinetoscope summary`` prints it: one screen (the default), every section,
the ``--section`` ones, or the JSON and Markdown documents (every section and the findings)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TextIO

from kinetoscope.report.runner import FINDINGS, Made

SCREEN, ALL, SECTIONS = "screen", "all", "sections"
SCREEN_WIDTH = 100
SCREEN_FINDINGS = 5  # groups of findings the one screen shows


@dataclass(frozen=True)
class Output:
    """``form``: text, json or markdown; ``layout`` (text): SCREEN, ALL or SECTIONS (``shown``'s);
    ``target``: the profile as the user named it, for the findings' ``kinetoscope view`` commands."""

    form: str = "text"
    layout: str = SCREEN
    shown: tuple[str, ...] = ()
    target: str = "PATH"

    @property
    def one_screen(self) -> bool:
        return self.form == "text" and self.layout == SCREEN


def write(made: Made, output: Output, out: TextIO) -> None:
    """JSON and Markdown: every section (and the findings); text: one screen, every section, or the
    ``--section`` ones."""
    from kinetoscope.findings.document import write_text
    from kinetoscope.render import Section, get_renderer

    sections = [Section(a.name, a.title, a.description, made.results[a.name]) for a in made.chosen]
    found = made.found
    if found is not None and output.form == "json":
        _write_json_with_findings(sections, found, out)
        return
    if output.one_screen and found is not None:
        from kinetoscope.findings.document import screen_lines
        from kinetoscope.render.summary_screen import write_screen

        lines = screen_lines(found, output.target, width=SCREEN_WIDTH, most=SCREEN_FINDINGS)
        write_screen(sections, out, findings=lines, facts=made.facts, width=SCREEN_WIDTH, on_demand=made.on_demand)
        out.write("\n")
        return
    if output.form == "text" and output.layout == SECTIONS:
        sections = [s for s in sections if s.name in output.shown]
        found = found if FINDINGS in output.shown else None
    if found is not None:
        write_text(found, out, markdown=output.form == "markdown", target=output.target)
    get_renderer(output.form).render(sections, out)


def _write_json_with_findings(sections: list[Any], found: list[Any], out: TextIO) -> None:
    """The summary's JSON document with the findings document beside ``analyses``."""
    from kinetoscope.findings.document import document as findings_document
    from kinetoscope.render.summary_json import document, write

    write(document(sections, findings_document(found)), out)

"""Summary sections as Markdown tables, for reports and pull requests."""

from __future__ import annotations

from typing import IO, ClassVar

from kinetoscope.render import Section
from kinetoscope.render.values import cell, header, is_numeric, shown_columns


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


class MarkdownRenderer:
    suffix: ClassVar[str] = "md"

    def render(self, sections: list[Section], out: IO[str]) -> None:
        for section in sections:
            out.write(f"## {section.title}\n\n")
            records = section.table.to_pylist()
            if not records:
                out.write("No data.\n\n")
                continue
            columns = shown_columns(section.table.column_names)
            out.write("| " + " | ".join(header(c) for c in columns) + " |\n")
            aligns = ["---:" if is_numeric(c, [r[c] for r in records]) else "---" for c in columns]
            out.write("|" + "|".join(aligns) + "|\n")
            for record in records:
                out.write("| " + " | ".join(_escape(cell(c, record[c])) for c in columns) + " |\n")
            out.write("\n")

"""Summary sections as JSON: ``{"schema": "kinetoscope.summary", "version": N, "analyses": {name:
{"title", "description", "rows": [...]}}}``, with raw values (times in ns, sizes in bytes); the
published schema is ``docs/summary.schema.json``, and a change of shape bumps ``SCHEMA_VERSION``."""

from __future__ import annotations

import json
from typing import IO, Any, ClassVar

from kinetoscope.render import Section

SCHEMA_NAME = "kinetoscope.summary"
SCHEMA_VERSION = 2  # 2: top_ops marks annotations (`annotation`)


class JsonRenderer:
    suffix: ClassVar[str] = "json"

    def render(self, sections: list[Section], out: IO[str]) -> None:
        write(document(sections), out)


def document(sections: list[Section], findings: dict[str, Any] | None = None) -> dict[str, Any]:
    """``{"schema", "version", "findings" (when given: the findings document), "analyses": {name:
    {"title", "description", "rows"}}}``."""
    return {
        "schema": SCHEMA_NAME,
        "version": SCHEMA_VERSION,
        **({"findings": findings} if findings is not None else {}),
        "analyses": {
            s.name: {"title": s.title, "description": s.description, "rows": s.table.to_pylist()} for s in sections
        }
    }


def write(found: dict[str, Any], out: IO[str]) -> None:
    """``found`` as the summary prints JSON: one space of indent, values that JSON lacks as text."""
    json.dump(found, out, indent=1, sort_keys=False, default=str)
    out.write("\n")

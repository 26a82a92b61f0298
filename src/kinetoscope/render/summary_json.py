"""Summary sections as JSON: ``{"analyses": {name: {"title", "description", "rows": [...]}}}``,
with raw values (times in ns, sizes in bytes)."""

from __future__ import annotations

import json
from typing import IO, Any, ClassVar

from kinetoscope.render import Section


class JsonRenderer:
    suffix: ClassVar[str] = "json"

    def render(self, sections: list[Section], out: IO[str]) -> None:
        write(document(sections), out)


def document(sections: list[Section]) -> dict[str, Any]:
    """``{"analyses": {name: {"title", "description", "rows"}}}``, to print or to add to."""
    return {
        "analyses": {
            s.name: {"title": s.title, "description": s.description, "rows": s.table.to_pylist()} for s in sections
        }
    }


def write(found: dict[str, Any], out: IO[str]) -> None:
    """``found`` as the summary prints JSON: one space of indent, values that JSON lacks as text."""
    json.dump(found, out, indent=1, sort_keys=False, default=str)
    out.write("\n")

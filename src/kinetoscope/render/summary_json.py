"""Summary sections as JSON: ``{"analyses": {name: {"title", "description", "rows": [...]}}}``,
with raw values (times in ns, sizes in bytes)."""

from __future__ import annotations

import json
from typing import IO, ClassVar

from kinetoscope.render import Section


class JsonRenderer:
    suffix: ClassVar[str] = "json"

    def render(self, sections: list[Section], out: IO[str]) -> None:
        document = {
            "analyses": {
                s.name: {"title": s.title, "description": s.description, "rows": s.table.to_pylist()} for s in sections
            }
        }
        json.dump(document, out, indent=1, sort_keys=False, default=str)
        out.write("\n")

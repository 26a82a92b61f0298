"""Renderers of analysis results: rich text, Markdown, JSON; and whole-trace exports.

Every summary renderer has one method, ``render(sections, out)``, where ``sections`` is a
list of ``Section`` (an analysis's title, description and result table).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO, ClassVar, Protocol

import pyarrow as pa


@dataclass(frozen=True)
class Section:
    name: str
    title: str
    description: str
    table: pa.Table


class Renderer(Protocol):
    suffix: ClassVar[str]

    def render(self, sections: list[Section], out: IO[str]) -> None: ...


def get_renderer(name: str) -> Renderer:
    """``text``, ``markdown`` or ``json``."""
    from kinetoscope.render import summary_json, summary_markdown, summary_text

    renderers: dict[str, Renderer] = {
        "text": summary_text.TextRenderer(),
        "markdown": summary_markdown.MarkdownRenderer(),
        "json": summary_json.JsonRenderer(),
    }
    if name not in renderers:
        raise ValueError(f"no renderer {name!r}; choose one of {', '.join(renderers)}")
    return renderers[name]

"""What ``Profile.summary()``, ``findings()`` and ``diff()`` return: the figures of the commands,
as Arrow tables and documents, shown in Jupyter (``_repr_html_``) and printed as the commands print them."""

from __future__ import annotations

import html
import importlib.util
from dataclasses import dataclass
from typing import Any

import pyarrow as pa


def to_pandas(table: pa.Table) -> Any:
    """``table`` as a pandas DataFrame (pandas is not a dependency of kinetoscope: install it to use this)."""
    if importlib.util.find_spec("pandas") is None:
        raise ImportError("to_pandas needs pandas: pip install pandas (or use the Arrow table as it is)")
    return table.to_pandas()


@dataclass(frozen=True)
class Findings:
    """The findings document of ``kinetoscope findings --json``, largest estimated gain first."""

    document: dict[str, Any]

    @property
    def items(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = self.document["findings"]
        return found

    @property
    def table(self) -> pa.Table:
        """One row per finding: rule, severity, rank, title, gain and summary."""
        keys = ("rule", "severity", "run", "rank", "title", "summary", "remedy")
        rows = [{**{k: f.get(k) for k in keys}, "gain_ns": f["gain"]["ns"]} for f in self.items]
        return pa.Table.from_pylist(rows) if rows else pa.table({k: pa.array([], pa.string()) for k in keys})

    def _repr_html_(self) -> str:
        if not self.items:
            return "<p>No rule fired: nothing the rules know of costs time here.</p>"
        items = "".join(
            f"<li><b>[{html.escape(str(f['severity']))}] {html.escape(str(f['title']))}</b> "
            f"(rank {html.escape(str(f['rank']))}, {html.escape(str(f['rule']))})<br>{html.escape(str(f['summary']))}"
            f"<br><i>remedy:</i> {html.escape(str(f['remedy']))}</li>"
            for f in self.items
        )
        return f"<ol>{items}</ol>"


@dataclass(frozen=True)
class Summary:
    """Every analysis of ``kinetoscope summary`` as an Arrow table, the findings, the text the
    command prints, and the offline report page (the Summary page's charts) for Jupyter."""

    sections: dict[str, pa.Table]
    findings: Findings
    text: str
    page: str  # the whole HTML of `kinetoscope report`, shown in an isolated frame

    def section(self, name: str) -> pa.Table:
        if name not in self.sections:
            raise KeyError(f"no section {name!r}; the sections are: {', '.join(self.sections)}")
        return self.sections[name]

    def to_pandas(self, name: str) -> Any:
        return to_pandas(self.section(name))

    def __str__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        # The report runs its own script; a sandboxed frame keeps it apart from the notebook's page.
        source = html.escape(self.page, quote=True)
        return (f'<iframe sandbox="allow-scripts" srcdoc="{source}" '
                'style="width:100%;height:900px;border:1px solid #ddd"></iframe>')  # fmt: skip


@dataclass(frozen=True)
class Diff:
    """The ``kinetoscope diff --json`` report of two runs, and its text."""

    report: dict[str, Any]
    text: str

    def __str__(self) -> str:
        return self.text

    def _repr_html_(self) -> str:
        return f"<pre>{html.escape(self.text)}</pre>"

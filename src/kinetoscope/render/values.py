"""Display of values by their column's unit suffix: ``_ns`` as milliseconds (time stamps,
``ts_ns``, as epoch ns), ``_bytes`` in binary units, ``_pct`` as a percentage, ``_gb_s`` as GB/s
(10^9 bytes a second); everything else as is."""

from __future__ import annotations

from typing import Any

from kinetoscope.analysis.time.denominators import SHARE_OF

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def header(column: str) -> str:
    """A column's heading: its name, its unit, and for a headline share what it is a share of."""
    if column in SHARE_OF:
        return column.removesuffix("_pct").replace("_", " ") + f" (% of {SHARE_OF[column]})"
    if column.endswith("ts_ns"):  # a time stamp is shown as is (see _number); only durations become ms
        return column.removesuffix("_ns").replace("_", " ") + " (epoch ns)"
    for suffix, unit in (("_ns", " (ms)"), ("_bytes", ""), ("_pct", " (%)"), ("_gb_s", " (GB/s)")):
        if column.endswith(suffix):
            return column.removesuffix(suffix).replace("_", " ") + unit
    return column.replace("_", " ")


def human_bytes(value: float) -> str:
    size = float(value)
    for unit in _BYTE_UNITS:
        if abs(size) < 1024 or unit == _BYTE_UNITS[-1]:
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{size:,.1f}"


def _number(column: str, value: float) -> str:
    if column.endswith("_ns") and not column.endswith("ts_ns"):
        return f"{value / 1e6:,.3f}"
    if column.endswith("_bytes"):
        return human_bytes(value)
    if column.endswith("_pct") or isinstance(value, float):
        return f"{value:,.2f}"
    return str(value)


ALL_RANKS = -1  # the rank of rows that sum every rank (kernel_type_breakdown)


def cell(column: str, value: Any) -> str:
    if value is None:
        return "-"
    if column == "rank" and value == ALL_RANKS:
        return "all"
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, (int, float)):
        return _number(column, value)
    return str(value)


def is_numeric(column: str, values: list[Any]) -> bool:
    return all(v is None or isinstance(v, (int, float)) for v in values)


def shorten(text: str, width: int = 80) -> str:
    """``text`` at most ``width`` characters, cut at the end (prose reads from its start)."""
    return text if len(text) <= width else text[: width - 1] + "…"


def middle(text: str, width: int) -> str:
    """``text`` on one line (line breaks and tabs made spaces) of at most ``width`` characters,
    shortened in the middle (a kernel's name keeps its start and its end, where templates say what
    differs)."""
    text = text.replace("\r\n", " ").replace("\n", " ").replace("\t", " ")
    if len(text) <= width:
        return text
    head = (width - 1) // 2
    return text[:head] + "…" + text[len(text) - (width - 1 - head) :]


# Columns for the viewer and for `sql` (an event id to open), not for reading: text and Markdown
# leave them out; --json keeps them.
LINK_COLUMNS = frozenset({"example_id"})


def shown_columns(names: list[str]) -> list[str]:
    """The columns a text or Markdown table shows."""
    return [name for name in names if name not in LINK_COLUMNS]

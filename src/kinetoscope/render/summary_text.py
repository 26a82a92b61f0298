"""Summary sections as rich tables (colour on a terminal, plain text otherwise)."""

from __future__ import annotations

from typing import IO, Any, ClassVar

from kinetoscope.render import Section
from kinetoscope.render.values import cell, header, is_numeric, shorten, shown_columns


class TextRenderer:
    suffix: ClassVar[str] = "txt"

    def render(self, sections: list[Section], out: IO[str]) -> None:
        from rich.console import Console

        console = Console(file=out, force_jupyter=False, width=max(100, Console(file=out, force_jupyter=False).width))
        for section in sections:
            records = section.table.to_pylist()
            columns = [c for c in shown_columns(section.table.column_names) if c != "run" or _several_runs(records)]
            if not records:
                console.print(f"[bold]{section.title}[/bold]: no data\n")
                continue
            wide = len(columns) > WIDE_COLUMNS and len(records) <= MAX_TRANSPOSED
            table = _transposed(section.title, columns, records) if wide else _table(section.title, columns, records)
            _print(console, table, out)
            console.print()


def _print(console: Any, table: Any, out: IO[str]) -> None:
    """On a terminal, within its width; into a file or a pipe, as wide as the table needs, so that
    no number is folded over lines (a log or a diff reads whole rows)."""
    if console.is_terminal:
        console.print(table)
        return
    from rich.console import Console

    natural = Console(file=out, force_jupyter=False, width=_UNBOUNDED_WIDTH).measure(table).maximum
    (Console(file=out, force_jupyter=False, width=natural) if natural > console.width else console).print(table)


_UNBOUNDED_WIDTH = 100_000


WIDE_COLUMNS = 9
MAX_TRANSPOSED = 16


def _table(title: str, columns: list[str], records: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left", title_style="bold")
    for column in columns:
        numeric = is_numeric(column, [r[column] for r in records])
        table.add_column(header(column), justify="right" if numeric else "left", overflow="fold", no_wrap=numeric)
    for record in records:
        table.add_row(*(shorten(cell(c, record[c]), 70) for c in columns))
    return table


def _transposed(title: str, columns: list[str], records: list[dict[str, Any]]) -> Any:
    """One row per column and one column per record (ranks side by side), for wide tables."""
    from rich.table import Table

    keys = [c for c in columns if c in ("run", "rank")]
    table = Table(title=title, title_justify="left", title_style="bold")
    table.add_column("")
    for record in records:
        table.add_column(" ".join(f"{k} {record[k]}" for k in keys), justify="right")
    for column in columns:
        if column not in keys:
            table.add_row(header(column), *(cell(column, r[column]) for r in records))
    return table


def _several_runs(records: list[dict[str, object]]) -> bool:
    return len({r.get("run") for r in records}) > 1

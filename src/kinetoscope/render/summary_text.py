"""Summary sections as rich tables (colour on a terminal, plain text otherwise)."""

from __future__ import annotations

from typing import IO, Any, ClassVar

from kinetoscope.render import Section
from kinetoscope.render.values import cell, header, is_numeric, middle, shown_columns


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
            parts = _parts(columns, records, console.width)
            for number, part in enumerate(parts, 1):
                title = section.title if len(parts) == 1 else f"{section.title} ({number} of {len(parts)})"
                _print(console, _table(title, part, records), out)
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
NAME_WIDTH = 40  # text cells longer than this are shortened in the middle
CELL_PADDING = 3  # rich's padding and rule between columns


def _parts(columns: list[str], records: list[dict[str, Any]], width: int) -> list[list[str]]:
    """``columns`` in parts that each fit ``width``, each part starting with the key columns (run,
    rank and the first text column after them, a name): a wide table reads as several tables of
    the same rows, never turned into one column per rank."""
    sizes = {c: max(len(header(c)), *(len(_text(c, r[c])) for r in records)) + CELL_PADDING for c in columns}
    keys = [c for c in columns if c in ("run", "rank")]
    after = [c for c in columns if c not in keys]
    if after and not is_numeric(after[0], [r[after[0]] for r in records]):
        keys.append(after[0])
    room = max(width - sum(sizes[c] for c in keys) - 4, 1)
    parts: list[list[str]] = []
    for column in (c for c in columns if c not in keys):
        if not parts or sum(sizes[c] for c in parts[-1]) + sizes[column] > room:
            parts.append([])
        parts[-1].append(column)
    return [keys + part for part in parts] or [keys]


def _text(column: str, value: Any) -> str:
    return middle(cell(column, value), NAME_WIDTH)


def _table(title: str, columns: list[str], records: list[dict[str, Any]]) -> Any:
    from rich.table import Table

    table = Table(title=title, title_justify="left", title_style="bold")
    for column in columns:
        numeric = is_numeric(column, [r[column] for r in records])
        table.add_column(header(column), justify="right" if numeric else "left", no_wrap=True)
    for record in records:
        table.add_row(*(_text(c, record[c]) for c in columns))
    return table


def _several_runs(records: list[dict[str, object]]) -> bool:
    return len({r.get("run") for r in records}) > 1

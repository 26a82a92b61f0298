"""Run SQL over a dataset: every table (events, flows, frames, counters, allocations,
sessions, files, warnings, schema) is a view.

Values go in parameters, never in the query text: `$name` with `-p name=value`, or `?` with
`--arg value` (in order). A value that reads as an integer or a number is passed as one.
Results print as a table, or go to a CSV or Parquet file.

  kinetoscope sql DATASET "SELECT name, sum(dur_ns) FROM events WHERE rank = $r GROUP BY 1" -p r=0
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kinetoscope._errors import CommandError
from kinetoscope.cli.locations import missing
from kinetoscope.cli.sources import add_profile_argument, opened_dataset, profile_path, warm_ingest


def typed(text: str) -> Any:
    for convert in (int, float):
        try:
            return convert(text)
        except ValueError:
            continue
    return text


def _named(pairs: list[str]) -> dict[str, Any]:
    params = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise CommandError(f"-p {pair!r}: expected NAME=VALUE", exit_code=2)
        params[name.lstrip("$")] = typed(value)
    return params


@dataclass(frozen=True)
class SqlOptions:
    dataset: Path | str
    query: str
    params: dict[str, Any] | list[Any] | None
    csv: Path | None
    parquet: Path | None
    max_rows: int


class SqlCommand:
    def prepare_parser(self, parser: argparse.ArgumentParser) -> None:
        add_profile_argument(parser, "dataset", "an ingested dataset (or a profile tree, ingested first)")
        parser.add_argument("query", help="the SQL query")
        parser.add_argument(
            "-p",
            "--param",
            action="append",
            default=[],
            metavar="NAME=VALUE",
            help="value of $NAME in the query (repeatable)",
        )
        parser.add_argument(
            "--arg", action="append", default=[], metavar="VALUE", help="value of the next ? in the query (repeatable)"
        )
        parser.add_argument("--csv", type=Path, default=None, help="write the result as CSV to this file ('-': stdout)")
        parser.add_argument("--parquet", type=Path, default=None, help="write the result as Parquet to this file")
        parser.add_argument("--max-rows", type=int, default=50, help="rows to print (default 50)")

    def run(self, args: argparse.Namespace) -> int:
        if args.param and args.arg:
            raise CommandError("use either -p NAME=VALUE or --arg VALUE, not both", exit_code=2)
        params: dict[str, Any] | list[Any] | None = _named(args.param) or [typed(a) for a in args.arg] or None
        dataset = profile_path(args.dataset, before_import=warm_ingest)
        return run_sql(SqlOptions(dataset, args.query, params, args.csv, args.parquet, args.max_rows))


def run_sql(options: SqlOptions) -> int:
    import duckdb


    if missing(options.dataset):
        raise CommandError(f"{options.dataset}: no such file or directory")
    with opened_dataset(options.dataset) as dataset:
        try:
            result = dataset.sql(options.query, options.params)
        except duckdb.Error as exc:
            raise CommandError(f"query failed: {exc}", exit_code=1) from exc
    _output(result, options)
    return 0


def _output(result: Any, options: SqlOptions) -> None:
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    if options.parquet is not None:
        pq.write_table(result, options.parquet)
    if options.csv is not None:
        pacsv.write_csv(result, sys.stdout.buffer if str(options.csv) == "-" else str(options.csv))
    if options.csv is None and options.parquet is None:
        print_table(result, options.max_rows)
    elif str(options.csv) != "-":
        print(f"{result.num_rows} row(s) written", file=sys.stderr)


def print_table(result: Any, max_rows: int) -> None:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    table = Table(show_edge=False)
    for name in result.column_names:
        table.add_column(Text(name), overflow="fold")
    shown = result.slice(0, max_rows)
    columns = [column.to_pylist() for column in shown.columns]  # by position: names may repeat
    for record in zip(*columns, strict=True):
        table.add_row(*(Text("NULL" if v is None else str(v)) for v in record))  # values, never markup
    console = Console(width=max(120, Console().width))
    console.print(table)
    if result.num_rows > max_rows:
        console.print(f"... {result.num_rows - max_rows} more row(s); use --csv or --parquet for all")


command = SqlCommand()

"""Event search: the query language, its parameterised SQL, and paged hits in time order.

A query is terms joined by `OR`; the terms of one side must all match. A term is a bare word (a
substring of the name, any case), a "quoted phrase" (a substring with spaces), a /regex/ (RE2,
case-sensitive unless it starts with `(?i)`), `field:value` (or `field:"value"`, `name:/re/`), or
a duration bound such as `dur>100us`, or an event argument: `arg:"Input Dims=[4096, 4096]"` (the
argument's value, as JSON, contains the text after `=`, spaces and case ignored) or `arg:Stream` (the
event has that argument). Anything malformed raises `SearchSyntaxError` with a message
meant for the search box; user text only ever reaches DuckDB as a parameter.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import duckdb

from kinetoscope.viewer.indexing.index import ViewerIndex
from kinetoscope.viewer.querying.queries import js_safe, overlap_sql

PAGE_SIZE = 200
MATCH_LIMIT = 20_000
TEXT_FIELDS = {"name": "name", "cat": "category", "category": "category", "layer": "layer", "run": "run"}
NUMBER_FIELDS = {"rank", "pid", "tid", "device", "stream", "id"}
UNITS_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
_TOKEN = re.compile(r'(?:(?P<field>\w+):)?'
                    r'(?:"(?P<quoted>[^"]*)"|/(?P<regex>(?:\\.|[^/\\])+)/(?=\s|$)|(?P<bare>[^\s"]+))')
_DURATION = re.compile(r"dur(<=|>=|<|>|=)([0-9]*\.?[0-9]+)(ns|us|µs|ms|s)?")


class SearchSyntaxError(ValueError):
    """The query cannot be read; the message says which part and how to write it."""


@dataclass(frozen=True)
class Term:
    """One condition: `kind` is "text", "regex", "field" or "dur"; `op` the comparison for "dur"."""

    kind: str
    value: str | int
    column: str = "name"
    op: str = ""


def _arg(text: str, regex: str | None) -> Term:
    """`arg:Key=value` or `arg:Key`: the argument's key and the text its value must contain."""
    if regex is not None:
        raise SearchSyntaxError("arg:/…/: regexes work on name and cat only")
    key, has_value, value = text.partition("=")
    if not key.strip():
        raise SearchSyntaxError(f'arg:{text}: name the argument, as in arg:"Input Dims=[4096, 4096]" or arg:stream')
    return Term("arg", "".join(value.split()).lower() if has_value else "", key.strip(), "=" if has_value else "")


def _term(field: str | None, quoted: str | None, regex: str | None, bare: str | None) -> Term:
    if field is not None and field.lower() not in TEXT_FIELDS and field.lower() not in NUMBER_FIELDS:
        if quoted is not None or regex is not None:
            known = ", ".join(sorted([*TEXT_FIELDS, *NUMBER_FIELDS, "arg"]))
            raise SearchSyntaxError(f"unknown field {field!r}: use one of {known}")
        return Term("text", f"{field}:{bare}")  # a name with a colon, such as aten::mm
    column = field.lower() if field else "name"
    if regex is not None:
        if column not in ("name", "cat", "category"):
            raise SearchSyntaxError(f"{field}:/…/: regexes work on name and cat only")
        return Term("regex", regex, TEXT_FIELDS[column])
    if quoted is not None:
        return Term("field", quoted, TEXT_FIELDS.get(column, column)) if field else Term("text", quoted)
    assert bare is not None
    if field is None:
        return _duration(bare) if re.match(r"dur[<>=]", bare) else Term("text", bare)
    if column in NUMBER_FIELDS:
        if not re.fullmatch(r"-?\d+", bare):
            raise SearchSyntaxError(f"{field}:{bare}: {field} takes a whole number, as in {field}:1")
        return Term("field", int(bare), column)
    return Term("field", bare, TEXT_FIELDS[column])


def _duration(token: str) -> Term:
    found = _DURATION.fullmatch(token)
    if not found:
        raise SearchSyntaxError(f"{token}: write durations as dur>100us or dur<2ms (units ns, us, ms, s)")
    op, number, unit = found.groups()
    return Term("dur", round(float(number) * UNITS_NS[unit or "ns"]), "dur", op)


def parse(query: str) -> list[list[Term]]:
    """The query as alternatives (joined by OR), each a list of terms that must all hold."""
    groups: list[list[Term]] = [[]]
    pos = 0
    while pos < len(query):
        if query[pos].isspace():
            pos += 1
            continue
        found = _TOKEN.match(query, pos)
        if not found or found.end() == pos:
            raise SearchSyntaxError(f"unclosed quote at {query[pos:pos + 20]!r}: write phrases as \"two words\"")
        pos = found.end()
        if found.group(0) == "OR":
            groups.append([])
            continue
        if found.group("bare") and found.group("bare").startswith("/") and found.group("field") is None:
            raise SearchSyntaxError(f"{found.group(0)}: a regex needs a closing slash, as in /aten::(mm|addmm)/")
        field, quoted, regex, bare = found.group("field", "quoted", "regex", "bare")
        groups[-1].append(_arg(quoted if quoted is not None else str(bare), regex)
                          if field is not None and field.lower() == "arg" else _term(field, quoted, regex, bare))
    if len(groups) > 1 and not all(groups):
        raise SearchSyntaxError("OR needs a term on each side, as in aten::mm OR aten::addmm")
    return [g for g in groups if g]


def _arg_sql(term: Term) -> tuple[str, list[Any]]:
    """Events whose args (JSON text in the dataset's ``events``) hold the key, or a value containing the text."""
    path = '$."' + term.column.replace('"', '\\"') + '"'
    if not term.op:
        return "ev.id IN (SELECT id FROM events WHERE json_exists(args, ?))", [path]
    return ("ev.id IN (SELECT id FROM events WHERE contains(lower(regexp_replace("
            "json_extract(args, ?)::VARCHAR, '\\s+', '', 'g')), ?))"), [path, term.value]


def _term_sql(term: Term) -> tuple[str, list[Any]]:
    if term.kind == "dur":
        return f"ev.dur {term.op} ?", [term.value]
    if term.kind == "text":
        return "ev.name IN (SELECT name_id FROM names WHERE contains(lower(name), lower(?)))", [term.value]
    if term.column in ("name", "category"):
        table, key, ev_column = ("names", "name_id", "name") if term.column == "name" else (
            "categories", "cat_id", "cat")
        test = "regexp_matches(" + term.column + ", ?)" if term.kind == "regex" else f"{term.column} ILIKE ?"
        return f"ev.{ev_column} IN (SELECT {key} FROM {table} WHERE {test})", [term.value]
    if term.column == "id":
        return "ev.id = ?", [term.value]
    if term.column in NUMBER_FIELDS:
        return f"view_tracks.{term.column} = ?", [term.value]
    return f"view_tracks.{term.column}::VARCHAR = ?", [term.value]


def where_sql(con: duckdb.DuckDBPyConnection, query: str) -> tuple[str, list[Any]]:
    """A WHERE condition over `ev` joined with `tracks` for `query`, and its parameters."""
    alternatives, params = [], []
    for group in parse(query):
        parts = []
        for term in group:
            if term.kind == "regex":
                _check_regex(con, str(term.value))
            sql, values = _arg_sql(term) if term.kind == "arg" else _term_sql(term)
            parts.append(sql)
            params += values
        alternatives.append("(" + " AND ".join(parts) + ")")
    return " OR ".join(alternatives) or "FALSE", params


def _check_regex(con: duckdb.DuckDBPyConnection, pattern: str) -> None:
    try:
        con.execute("SELECT regexp_matches('', ?)", [pattern]).fetchone()
    except duckdb.Error as exc:
        reason = str(exc).splitlines()[0].split(": ", 1)[-1]
        raise SearchSyntaxError(f"/{pattern}/ is not a valid regex: {reason}") from exc


def search(index: ViewerIndex, query: str, offset: int = 0, limit: int = PAGE_SIZE) -> dict[str, Any]:
    """Hits `offset` … `offset + limit` in time order (ts, then id), each with its 1-based position `n`."""
    con = index.cursor()
    if not query.strip():
        return {"query": query, "total": 0, "offset": 0, "hits": []}
    where, params = where_sql(con, query)
    cursor = con.execute(f"""
        SELECT ev.id, ev.track, ev.lane, ev.ts, ev.dur, names.name, view_tracks.rank, count(*) OVER () AS total
        FROM ev JOIN view_tracks ON view_tracks.track_id = ev.track JOIN names ON names.name_id = ev.name
        WHERE {where} ORDER BY ev.ts, ev.id LIMIT ? OFFSET ?""", [*params, max(limit, 1), max(offset, 0)])
    rows = cursor.fetchall()
    total = int(rows[0][-1]) if rows else _count(con, where, params)
    keys = ("id", "track", "lane", "ts", "dur", "name", "rank")
    hits = [{"n": offset + i + 1, **{k: js_safe(v) for k, v in zip(keys, r[:-1], strict=True)}}
            for i, r in enumerate(rows)]
    return {"query": query, "total": total, "offset": max(offset, 0), "hits": hits}


def _count(con: duckdb.DuckDBPyConnection, where: str, params: list[Any]) -> int:
    found = con.execute(f"SELECT count(*) FROM ev JOIN view_tracks ON view_tracks.track_id = ev.track WHERE {where}",
                        params).fetchone()
    return int(found[0]) if found else 0


def matches(index: ViewerIndex, query: str, start_ns: int, end_ns: int, tracks: list[int]) -> dict[str, Any]:
    """Ids of the events matching `query` that overlap [start, end) on `tracks`, for highlighting."""
    con = index.cursor()
    if not query.strip():
        return {"ids": [], "truncated": False}
    where, params = where_sql(con, query)
    inner, inner_params = overlap_sql(index, start_ns, end_ns, "id, track, ts, dur, name, cat")
    rows = con.execute(f"""
        SELECT ev.id FROM ({inner}) ev JOIN view_tracks ON view_tracks.track_id = ev.track
        WHERE list_contains(?, ev.track) AND ({where}) LIMIT ?""",
        [*inner_params, tracks, *params, MATCH_LIMIT + 1]).fetchall()
    return {"ids": [js_safe(r[0]) for r in rows[:MATCH_LIMIT]], "truncated": len(rows) > MATCH_LIMIT}

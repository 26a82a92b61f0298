"""The front end's declared types (web/src/api.ts and the interfaces beside it) against what the server
sends: each main endpoint's answer, read as a browser reads JSON, has every field its interface
declares, of the declared type. Fields the page does not read may go undeclared.

The TypeScript is read by a small parser that knows what these interfaces use: primitives, string
literals, unions, arrays, ``Record<string, T>``, inline objects, optional fields, ``extends`` and
named types."""

from __future__ import annotations

import json
import re
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kinetoscope.viewer.indexing.index import ViewerIndex

from ..conftest import REPO
from .helpers import running_server

WEB_SRC = REPO / "web" / "src"
TYPE_FILES = ("lib/api.ts", "lib/ids.ts", "timeline/collectivelinks.ts", "pages/memory.ts")
TOKEN = re.compile(r'\s*(?:(?P<str>"[^"]*")|(?P<num>-?\d+(?:\.\d+)?)|(?P<name>[A-Za-z_$][\w$]*)'
                   r'|(?P<punct>[{}\[\]<>()|;:?,&=]))')
PRIMITIVES = {"number", "string", "boolean", "null", "unknown", "undefined", "any"}
Type = tuple[Any, ...]


def _strip_comments(text: str) -> str:
    return re.sub(r"//[^\n]*", "", re.sub(r"/\*.*?\*/", "", text, flags=re.S))


def _block(text: str, at: int) -> tuple[str, int]:
    """The text inside the braces opening at `at`, and the index after the closing brace."""
    depth = 0
    for i in range(at, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[at + 1:i], i + 1
    raise ValueError("unclosed brace")


def declarations(files: tuple[str, ...] = TYPE_FILES) -> dict[str, str]:
    """Interface bodies (``{...}``, with ``extends`` kept as ``A & B & {...}``) and type aliases, by name."""
    found: dict[str, str] = {}
    for name in files:
        text = _strip_comments((WEB_SRC / name).read_text(encoding="utf-8"))
        for m in re.finditer(r"^(?:export )?interface (\w+)(?: extends ([\w, ]+))? *\{", text, flags=re.M):
            body, _ = _block(text, m.end() - 1)
            bases = [b.strip() for b in (m.group(2) or "").split(",") if b.strip()]
            found[m.group(1)] = " & ".join([*bases, "{" + body + "}"])
        for m in re.finditer(r"^(?:export )?type (\w+) = ([^;]+);", text, flags=re.M):
            found[m.group(1)] = m.group(2)
    return found


class Parser:
    """TypeScript type expressions as tuples: ("prim", name), ("lit", value), ("array", T), ("record", T),
    ("object", {field: (T, optional)}), ("union", [T...]), ("all", [T...]) for ``&``, ("ref", name)."""

    def __init__(self, text: str) -> None:
        self.tokens = [next(v for v in m.groupdict().values() if v is not None) for m in TOKEN.finditer(text)]
        self.at = 0

    def peek(self, ahead: int = 0) -> str | None:
        return self.tokens[self.at + ahead] if self.at + ahead < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.tokens[self.at]
        assert expected is None or token == expected, f"expected {expected!r}, got {token!r} at {self.at}"
        self.at += 1
        return token

    def parse(self) -> Type:
        found = self.union()
        assert self.peek() is None, f"unparsed: {self.tokens[self.at:]}"
        return found

    def union(self) -> Type:
        if self.peek() == "|":
            self.take()
        parts = [self.intersection()]
        while self.peek() == "|":
            self.take()
            parts.append(self.intersection())
        return parts[0] if len(parts) == 1 else ("union", parts)

    def intersection(self) -> Type:
        parts = [self.postfix()]
        while self.peek() == "&":
            self.take()
            parts.append(self.postfix())
        return parts[0] if len(parts) == 1 else ("all", parts)

    def postfix(self) -> Type:
        found = self.primary()
        while self.peek() == "[" and self.peek(1) == "]":
            self.take(), self.take()
            found = ("array", found)
        return found

    def primary(self) -> Type:
        token = self.take()
        special = {"(": self.parenthesised, "{": self.object, "Record": self.record}.get(token)
        if special is not None:
            return special()
        if token.startswith('"'):
            return ("lit", token[1:-1])
        if re.fullmatch(r"-?\d+(?:\.\d+)?", token) or token in ("true", "false"):
            return ("lit", json.loads(token))
        return ("prim", token) if token in PRIMITIVES else ("ref", token)

    def parenthesised(self) -> Type:
        found = self.union()
        self.take(")")
        return found

    def record(self) -> Type:
        self.take("<"), self.take("string"), self.take(",")
        value = self.union()
        self.take(">")
        return ("record", value)

    def object(self) -> Type:
        fields: dict[str, tuple[Type, bool]] = {}
        while self.peek() != "}":
            name = self.take()
            optional = self.peek() == "?"
            if optional:
                self.take()
            self.take(":")
            fields[name] = (self.union(), optional)
            if self.peek() in (";", ","):
                self.take()
        self.take("}")
        return ("object", fields)


class Checker:
    def __init__(self, declared: dict[str, str]) -> None:
        self.declared = declared
        self.parsed: dict[str, Type] = {}

    def resolve(self, name: str) -> Type:
        if name not in self.parsed:
            assert name in self.declared, f"type {name} is not declared in {TYPE_FILES}"
            self.parsed[name] = Parser(self.declared[name]).parse()
        return self.parsed[name]

    def fields(self, t: Type) -> dict[str, tuple[Type, bool]] | None:
        """The fields of an object type, ``extends`` and ``&`` merged; None if `t` is no object type."""
        if t[0] == "ref":
            return self.fields(self.resolve(t[1]))
        if t[0] == "object":
            return dict(t[1])
        if t[0] == "all":
            merged: dict[str, tuple[Type, bool]] = {}
            for part in t[1]:
                more = self.fields(part)
                if more is None:
                    return None
                merged.update(more)
            return merged
        return None

    def errors(self, value: Any, t: Type, where: str) -> list[str]:
        """What in `value` does not agree with the type `t` (empty if it all does)."""
        check = {"ref": lambda: self.errors(value, self.resolve(t[1]), where),
                 "prim": lambda: _primitive(value, t[1], where),
                 "lit": lambda: [] if value == t[1] else [f"{where}: {t[1]!r} declared, {value!r} sent"],
                 "array": lambda: self._array(value, t[1], where), "record": lambda: self._record(value, t[1], where),
                 "union": lambda: self._union(value, t[1], where)}.get(t[0])
        return check() if check is not None else self._object(value, t, where)

    def _array(self, value: Any, item: Type, where: str) -> list[str]:
        if not isinstance(value, list):
            return [f"{where}: an array declared, {type(value).__name__} sent"]
        return [e for i, v in enumerate(value[:50]) for e in self.errors(v, item, f"{where}[{i}]")]

    def _record(self, value: Any, item: Type, where: str) -> list[str]:
        if not isinstance(value, dict):
            return [f"{where}: a Record declared, {type(value).__name__} sent"]
        return [e for k, v in value.items() for e in self.errors(v, item, f"{where}.{k}")]

    def _union(self, value: Any, parts: list[Type], where: str) -> list[str]:
        tried = [self.errors(value, part, where) for part in parts]
        return [] if any(not e for e in tried) else min(tried, key=len)

    def _object(self, value: Any, t: Type, where: str) -> list[str]:
        fields = self.fields(t)
        assert fields is not None, t
        if not isinstance(value, dict):
            return [f"{where}: an object declared, {type(value).__name__} sent"]
        found: list[str] = []
        for name, (field_type, optional) in fields.items():
            if name not in value:
                found += [] if optional else [f"{where}.{name}: declared but not sent"]
            else:
                found += self.errors(value[name], field_type, f"{where}.{name}")
        return found


PRIMITIVE_CHECKS = {"number": lambda v: isinstance(v, float), "string": lambda v: isinstance(v, str),
                    "boolean": lambda v: isinstance(v, bool), "null": lambda v: v is None, "undefined": lambda v: False}


def _primitive(value: Any, name: str, where: str) -> list[str]:
    ok = PRIMITIVE_CHECKS.get(name, lambda v: True)(value)  # unknown, any
    return [] if ok else [f"{where}: {name} declared, {type(value).__name__} {str(value)[:40]!r} sent"]


def as_page_reads(body: bytes) -> Any:
    """JSON as a browser reads it: every number a float64 (so an int where a string is declared shows)."""
    return json.loads(body, parse_int=float)


def page_text(value: Any) -> str:
    """The text the page sends back for an id it holds (JavaScript's String() of a number or a string)."""
    return value if isinstance(value, str) else str(int(value))


@pytest.fixture(scope="module")
def base(multirank: ViewerIndex) -> Iterator[str]:
    with running_server(multirank) as url:
        yield url


def fetch(base: str, path: str, body: dict[str, Any] | None = None) -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(base + path, data=data, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        return as_page_reads(response.read())


def answers(base: str) -> Iterator[tuple[str, str, Any]]:
    """(path, declared type, answer) of each main endpoint, on the events of the four-rank dataset."""
    meta = fetch(base, "/api/meta")
    yield "/api/meta", "Meta", meta
    span = int(meta["span_ns"])
    tracks = ",".join(str(int(t["id"])) for t in meta["tracks"])
    counters = ",".join(str(int(c["id"])) for c in meta["counters"][:4])
    for px in (50, 4000):
        path = f"/api/window?start=0&end={span}&px={px}&tracks={tracks}"
        yield path, "WindowData", fetch(base, path)
    path = f"/api/counters?start=0&end={span}&px=200&ids={counters}"
    yield path, "CounterData", fetch(base, path)
    search = fetch(base, "/api/search?q=aten::addmm")
    yield "/api/search?q=aten::addmm", "SearchResult", search
    hit = page_text(search["hits"][0]["id"])
    for path, declared in ((f"/api/event/{hit}", "Details"), (f"/api/flows/{hit}", "Chain"),
                           (f"/api/neighbour/{hit}?dir=next", "Brief | null"),
                           (f"/api/matches?q=aten::addmm&start=0&end={span}&tracks={tracks}", "Matches"),
                           (f"/api/range?start=0&end={span}&tracks={tracks}", "RangeSummary"),
                           (f"/api/area?start=0&end={span // 4}&tracks={tracks}", "AreaSummary"),
                           (f"/api/area/pivot?start=0&end={span // 4}&tracks={tracks}&by=arg&arg=Input%20Dims",
                            "PivotResult")):
        yield path, declared, fetch(base, path)
    collective = page_text(fetch(base, "/api/search?q=cat:kernel%20nccl")["hits"][0]["id"])
    for path, declared in ((f"/api/collective/{collective}", "CollectiveInstance"),
                           (f"/api/collective/{hit}", "CollectiveInstance")):
        yield path, declared, fetch(base, path)
    sources = fetch(base, "/api/memory/sources")
    yield "/api/memory/sources", "AllocSource[]", sources
    where = f"run={sources[0]['run']}&rank={int(sources[0]['rank'])}&device={int(sources[0]['device'])}"
    allocations = fetch(base, f"/api/memory/allocations?{where}")
    yield f"/api/memory/allocations?{where}", "Allocations", allocations
    yield f"/api/memory/largest?{where}", "LargestAllocations", fetch(base, f"/api/memory/largest?{where}")
    yield "/api/memory/series", "{ series: MemorySeries[] }", fetch(base, "/api/memory/series")
    at = int(allocations["allocations"][-1]["alloc"])
    path = f"/api/op_at?run={sources[0]['run']}&rank={int(sources[0]['rank'])}&ts={at}"
    yield path, "Brief | null", fetch(base, path)
    yield "/api/summary", "Summary", fetch(base, "/api/summary")
    yield "/api/findings", "Findings", fetch(base, "/api/findings")
    yield "/api/sql", "SqlResult", fetch(base, "/api/sql", {"q": "SELECT id, name, ts_ns FROM events LIMIT 5"})


def test_the_parser_reads_the_interfaces_it_checks() -> None:
    checker = Checker(declarations())
    brief = checker.fields(("ref", "Details"))
    assert brief is not None and brief["id"] == (("ref", "EventId"), False) and brief["provenance"][1]
    assert checker.resolve("EventId") == ("prim", "string")
    assert checker.errors({"ids": [7.0], "truncated": False}, ("ref", "Matches"), "m") == [
        "m.ids[0]: string declared, float '7.0' sent"]
    assert checker.errors({"truncated": 1.0}, ("ref", "Matches"), "m") == [
        "m.ids: declared but not sent", "m.truncated: boolean declared, float '1.0' sent"]


def test_what_the_server_sends_is_what_api_ts_declares(base: str) -> None:
    checker = Checker(declarations())
    found = [e for path, declared, answer in answers(base)
             for e in checker.errors(answer, Parser(declared).parse(), path)]
    assert found == []

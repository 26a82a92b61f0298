"""The labelled truth harness: each case is a trace with what an independent count says about it.

A case (``tests/truth/cases/<name>.py`` defining ``CASE = Case(...)``) builds a trace, and says
which numbers kinetoscope must print for it, which findings must and must not fire, and which
``verify`` checks must and must not be raised. The expected numbers come from the case's own
hand count over the events it generated (or ``key_averages``, HTA or TraceLens with their
documented definitions), never from kinetoscope's output.

``run_case`` drives the real command line in-process, as a user would:

1. ``build(folder)`` writes raw trace(s) or a profile tree and returns a path: a trace file or a
   folder of trace files is imported (``kinetoscope import PATH --out folder/profile``); a folder
   that already holds session directories is the profile itself;
2. ``kinetoscope ingest PROFILE --out folder/dataset --jobs 1``;
3. ``kinetoscope summary DATASET --json`` (plus ``Case.summary_args``),
   ``kinetoscope findings DATASET --json`` (plus ``Case.findings_args``) and
   ``kinetoscope verify PROFILE --json``.

Paths into the three JSON documents (the keys of ``Case.numbers``)
--------------------------------------------------------------------

``<document>:<path>``, where ``<document>`` is ``summary``, ``findings`` or ``verify`` and
``<path>`` is segments separated by ``.``, applied left to right:

* ``key``: that key of an object. In the summary document, a first segment that names an
  analysis (``stragglers``) stands for ``analyses.<analysis>.rows``; ``analyses.x.rows`` also works.
* ``3``: the element at that index of a list.
* ``[k=v,k2=v2]``: the ONE element of a list whose fields equal these values (it is an error
  when none or several match). A value is compared with the field as JSON writes it, strings
  unquoted: ``rank=0``, ``collective=allreduce``, ``straggler=true``, ``group=null``.
* ``{k=v,...}``: ALL elements of a list that match (a list, possibly empty); ``{}`` is all.
* last segment only, over a list: ``#`` (its length), ``count(k=v,...)`` (elements that match),
  ``max(field)``, ``min(field)``, ``sum(field)`` (over the elements' ``field``; an empty list
  has no max or min: an error), ``values(field)`` (the list of the elements' ``field``, in order).

Examples::

    "summary:matched_collectives{collective=allreduce}.max(end_spread_ns)"
    "summary:stragglers[rank=3].straggler"
    "summary:temporal_breakdown[rank=0].idle_ns"
    "findings:findings.count(rule=sync_in_step)"
    "verify:findings.count(check=clock_skew)"

Tolerance
---------

* an ``int`` expected value: the actual value is an int (or an integral float) equal to it;
  nanosecond figures are exact;
* a ``float`` expected value: within ``0.005 + 1e-9 x |expected|`` (the JSON rounds percentages
  to 2 decimals and bandwidths to 3: an unrounded hand count matches the printed figure);
* a ``str``, ``bool`` or ``None``: equal;
* ``Near(value, abs_=..., rel=...)``: within the larger of the absolute and relative tolerance;
* ``Between(lo, hi)``: ``lo <= actual <= hi`` (either bound may be None: unbounded) — for
  figures that must stay under (or over) a bound rather than equal a count, such as the end
  spread of a matched collective on ranks of one host;
* ``OneOf(a, b, ...)``: equal to one of them.

Findings and ``verify`` problems
--------------------------------

``expected_findings`` / ``forbidden_findings`` are rule ids of ``findings --json`` (a rule fires
when it has at least one finding that is not a ``cannot judge``). Every case also forbids a
finding whose estimated gain exceeds its rank's window. ``expected_problems`` / ``forbidden_problems`` are ``verify``
check ids raised at severity ``problem`` or ``error`` (a ``note`` is not a problem).
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import math
import pkgutil
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DOCUMENTS = ("summary", "findings", "verify")
FLOAT_ABS = 0.005
FLOAT_REL = 1e-9
PROBLEM_SEVERITIES = ("problem", "error")


@dataclass(frozen=True)
class Near:
    """Within ``abs_`` or ``rel`` x |value| of ``value`` (the larger)."""

    value: float
    abs_: float = 0.0
    rel: float = 0.0

    def accepts(self, actual: Any) -> bool:
        return _is_number(actual) and abs(actual - self.value) <= max(self.abs_, self.rel * abs(self.value))

    def __str__(self) -> str:
        return f"{self.value} ±{max(self.abs_, self.rel * abs(self.value)):g}"


@dataclass(frozen=True)
class Between:
    """``lo <= actual <= hi``; a None bound is open."""

    lo: float | None = None
    hi: float | None = None

    def accepts(self, actual: Any) -> bool:
        if not _is_number(actual):
            return False
        return (self.lo is None or actual >= self.lo) and (self.hi is None or actual <= self.hi)

    def __str__(self) -> str:
        return f"[{'' if self.lo is None else self.lo}, {'' if self.hi is None else self.hi}]"


@dataclass(frozen=True)
class OneOf:
    """Equal (by ``matches``) to one of ``values``."""

    values: tuple[Any, ...]

    def __init__(self, *values: Any) -> None:
        object.__setattr__(self, "values", values)

    def accepts(self, actual: Any) -> bool:
        return any(matches(value, actual) for value in self.values)

    def __str__(self) -> str:
        return " | ".join(map(str, self.values))


@dataclass(frozen=True, kw_only=True)
class Case:
    """One labelled situation. See the module docstring for ``numbers``' paths and tolerance."""

    name: str
    situation: str
    source: str
    truth: str
    build: Callable[[Path], Path]
    numbers: Mapping[str, Any] = field(default_factory=dict)
    expected_findings: Sequence[str] = ()
    forbidden_findings: Sequence[str] = ()
    expected_problems: Sequence[str] = ()
    forbidden_problems: Sequence[str] = ()
    summary_args: Sequence[str] = ()
    findings_args: Sequence[str] = ()


@dataclass
class Outcome:
    """What one case's run found: each check's failure message ("" passed), and the documents."""

    case: Case
    failures: list[str] = field(default_factory=list)
    numbers_checked: int = 0
    documents: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.failures


RESULTS: list[Outcome] = []  # every case run in this session, for the terminal summary table


# ---------------------------------------------------------------- the cases


def case_names() -> list[str]:
    """The modules of ``tests.truth.cases``, sorted."""
    from tests.truth import cases

    return sorted(info.name for info in pkgutil.iter_modules(cases.__path__) if not info.name.startswith("_"))


def load_case(name: str) -> Case:
    module = importlib.import_module(f"tests.truth.cases.{name}")
    case = module.CASE
    if not isinstance(case, Case):
        raise TypeError(f"tests/truth/cases/{name}.py: CASE is a {type(case).__name__}, not a Case")
    if case.name != name:
        raise ValueError(f"tests/truth/cases/{name}.py: CASE.name is {case.name!r}, not the module's name")
    return case


# ---------------------------------------------------------------- running the command line


def _cli(argv: list[str]) -> tuple[int, str, str]:
    """``kinetoscope ARGV`` in this process: (exit status, stdout, stderr)."""
    from kinetoscope.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's refusals
            code = int(exc.code or 0) if not isinstance(exc.code, str) else 2
    return code, out.getvalue(), err.getvalue()


def _is_profile(path: Path) -> bool:
    from kinetoscope.format.session_files import session_dir as layout

    return path.is_dir() and bool(layout.find_sessions(path))


def documents(case: Case, folder: Path) -> dict[str, Any]:
    """The three JSON documents of the case's trace, through import, ingest, summary, findings, verify."""
    built = case.build(folder)
    profile = built if _is_profile(built) else folder / "profile"
    if profile is not built:
        code, _, err = _cli(["import", str(built), "--out", str(profile)])
        if code != 0:
            raise AssertionError(f"import exited {code}: {err.strip()}")
    dataset = folder / "dataset"
    code, _, err = _cli(["ingest", str(profile), "--out", str(dataset), "--jobs", "1", "--quiet"])
    if code != 0:
        raise AssertionError(f"ingest exited {code}: {err.strip()}")
    found: dict[str, Any] = {}
    for name, argv in (
        ("summary", ["summary", str(dataset), "--json", *case.summary_args]),
        ("findings", ["findings", str(dataset), "--json", *case.findings_args]),
        ("verify", ["verify", str(profile), "--json"]),
    ):
        code, out, err = _cli(argv)
        try:
            found[name] = json.loads(out)
        except json.JSONDecodeError as exc:
            message = f"{name} exited {code} without a JSON document ({exc}): {err.strip()[-2000:]}"
            raise AssertionError(message) from exc
    return found


def run_case(case: Case, folder: Path) -> Outcome:
    """Runs ``case`` in ``folder`` and checks every label; the outcome is also kept in RESULTS."""
    outcome = Outcome(case)
    RESULTS.append(outcome)
    try:
        outcome.documents = documents(case, folder)
    except AssertionError as exc:
        outcome.failures.append(str(exc))
        return outcome
    outcome.failures += check_numbers(case.numbers, outcome.documents)
    outcome.numbers_checked = len(case.numbers)
    outcome.failures += check_findings(case, outcome.documents["findings"])
    outcome.failures += check_problems(case, outcome.documents["verify"])
    return outcome


# ---------------------------------------------------------------- checking labels


def check_numbers(numbers: Mapping[str, Any], docs: Mapping[str, Any]) -> list[str]:
    failures = []
    for path, expected in numbers.items():
        try:
            actual = resolve(docs, path)
        except LookupError as exc:
            failures.append(f"{path}: {exc}")
            continue
        if not matches(expected, actual):
            failures.append(f"{path}: expected {expected}, found {actual!r}")
    return failures


def rules_fired(findings_doc: Any) -> set[str]:
    """The rules that judged and fired (a rule that abstained, ``cannot judge``, did not fire)."""
    return {str(f.get("rule")) for f in findings_doc.get("findings", []) if not f.get("cannot_judge")}


def gains_past_their_window(findings_doc: Any) -> list[str]:
    """Every case forbids a finding whose estimated gain exceeds its rank's window."""
    return [
        f"finding {f.get('rule')} on rank {f.get('rank')}: a gain of {f['gain']['ns']} ns in a window of "
        f"{f['window']['ns']} ns"
        for f in findings_doc.get("findings", [])
        if f.get("window", {}).get("ns") and f["gain"]["ns"] > f["window"]["ns"]
    ]


def problems_raised(verify_doc: Any) -> set[str]:
    return {str(f.get("check")) for f in verify_doc.get("findings", []) if f.get("severity") in PROBLEM_SEVERITIES}


def check_findings(case: Case, findings_doc: Any) -> list[str]:
    fired = rules_fired(findings_doc)
    return gains_past_their_window(findings_doc) + [
        f"finding {rule} did not fire" for rule in case.expected_findings if rule not in fired
    ] + [
        f"forbidden finding {rule} fired: {_messages(findings_doc, 'rule', rule, 'summary')}"
        for rule in case.forbidden_findings
        if rule in fired
    ]


def check_problems(case: Case, verify_doc: Any) -> list[str]:
    raised = problems_raised(verify_doc)
    return [f"verify did not raise {check}" for check in case.expected_problems if check not in raised] + [
        f"forbidden verify problem {check}: {_messages(verify_doc, 'check', check, 'message')}"
        for check in case.forbidden_problems
        if check in raised
    ]


def _messages(doc: Any, key: str, value: str, text: str) -> str:
    return "; ".join(str(f.get(text, "")) for f in doc.get("findings", []) if f.get(key) == value)[:500]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and not math.isnan(value)


def matches(expected: Any, actual: Any) -> bool:
    """Whether ``actual`` satisfies ``expected`` under the tolerance rules of the module docstring."""
    if hasattr(expected, "accepts"):
        return bool(expected.accepts(actual))
    if isinstance(expected, bool) or expected is None or isinstance(expected, str):
        return type(actual) is type(expected) and actual == expected
    if isinstance(expected, int):
        return _is_number(actual) and float(actual).is_integer() and int(actual) == expected
    if isinstance(expected, float):
        return _is_number(actual) and abs(actual - expected) <= FLOAT_ABS + FLOAT_REL * abs(expected)
    return bool(expected == actual)


# ---------------------------------------------------------------- the path language

_SEGMENT_RE = re.compile(r"\[[^\]]*\]|\{[^}]*\}|[^.\[{]+")
_AGGREGATE_RE = re.compile(r"^(count|max|min|sum|values)\((.*)\)$")


def split_path(path: str) -> tuple[str, list[str]]:
    document, sep, rest = path.partition(":")
    if not sep or document not in DOCUMENTS:
        raise LookupError(f"a path starts with one of {', '.join(DOCUMENTS)} and a colon")
    segments = [s for s in _SEGMENT_RE.findall(rest) if s != "."]
    if "".join(segments) != rest.replace(".", ""):
        raise LookupError(f"cannot read the path {rest!r}")
    return document, segments


def resolve(docs: Mapping[str, Any], path: str) -> Any:
    """The value ``path`` names in ``docs`` (document name -> parsed JSON); LookupError if none."""
    document, segments = split_path(path)
    value = docs[document]
    if document == "summary" and segments and segments[0] not in value and segments[0] in value.get("analyses", {}):
        value = value["analyses"][segments[0]]["rows"]
        segments = segments[1:]
    for at, segment in enumerate(segments):
        last = at == len(segments) - 1
        value = _step(value, segment, last)
    return value


def _filters(text: str) -> dict[str, str]:
    found = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, wanted = part.partition("=")
        if not sep:
            raise LookupError(f"a filter is key=value, not {part!r}")
        found[key.strip()] = wanted.strip()
    return found


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _fits(element: Any, wanted: dict[str, str]) -> bool:
    return isinstance(element, dict) and all(k in element and _as_text(element[k]) == v for k, v in wanted.items())


def _step(value: Any, segment: str, last: bool) -> Any:
    if segment.startswith("["):
        return _one(value, _filters(segment[1:-1]), segment)
    if segment.startswith("{"):
        return [e for e in _as_list(value, segment) if _fits(e, _filters(segment[1:-1]))]
    if last and segment == "#":
        return len(_as_list(value, segment))
    if last and (match := _AGGREGATE_RE.match(segment)) is not None:
        return _aggregate(_as_list(value, segment), match.group(1), match.group(2).strip())
    if isinstance(value, list) and segment.lstrip("-").isdigit():
        index = int(segment)
        if not -len(value) <= index < len(value):
            raise LookupError(f"{segment}: index out of a list of {len(value)}")
        return value[index]
    if isinstance(value, dict):
        if segment not in value:
            raise LookupError(f"{segment}: no such key (keys: {', '.join(map(str, list(value)[:20]))})")
        return value[segment]
    raise LookupError(f"{segment}: cannot be applied to a {type(value).__name__}")


def _as_list(value: Any, segment: str) -> list[Any]:
    if not isinstance(value, list):
        raise LookupError(f"{segment}: applies to a list, not a {type(value).__name__}")
    return value


def _one(value: Any, wanted: dict[str, str], segment: str) -> Any:
    found = [e for e in _as_list(value, segment) if _fits(e, wanted)]
    if len(found) != 1:
        raise LookupError(f"{segment}: {len(found)} elements match (exactly one must)")
    return found[0]


def _aggregate(elements: list[Any], how: str, argument: str) -> Any:
    if how == "count":
        wanted = _filters(argument)
        return sum(1 for e in elements if _fits(e, wanted))
    picked = [e.get(argument) if isinstance(e, dict) else None for e in elements]
    if how == "values":
        return picked
    numbers: list[Any] = [p for p in picked if _is_number(p)]
    if len(numbers) != len(picked):
        raise LookupError(f"{how}({argument}): not every element has a number there: {picked[:10]}")
    if how == "sum":
        return sum(numbers)
    if not numbers:
        raise LookupError(f"{how}({argument}) of no elements")
    return max(numbers) if how == "max" else min(numbers)


# ---------------------------------------------------------------- the table


def table(outcomes: Sequence[Outcome]) -> list[str]:
    """The lines of the summary table: case, numbers checked, findings expected/forbidden, verify
    problems expected/forbidden, verdict (and the first failure)."""
    header = ("case", "numbers", "findings +/-", "problems +/-", "verdict")
    rows = [
        (
            o.case.name,
            str(o.numbers_checked),
            f"{len(o.case.expected_findings)}/{len(o.case.forbidden_findings)}",
            f"{len(o.case.expected_problems)}/{len(o.case.forbidden_problems)}",
            "pass" if o.passed else f"FAIL ({len(o.failures)}): {o.failures[0][:120]}",
        )
        for o in outcomes
    ]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(4)]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(r[:4], widths, strict=True)) + "  " + r[4]
             for r in [header, *rows]]
    passed = sum(o.passed for o in outcomes)
    lines.append(f"{passed} of {len(outcomes)} cases pass; {sum(o.numbers_checked for o in outcomes)} numbers checked")
    return lines

"""The rule engine: rules registered once, run per rank, findings ranked by estimated gain.

A rule is a small function ``fn(rank, limits) -> list[Observation]``: ``rank`` holds one rank's
events (and its sessions and warnings), ``limits`` the rule's thresholds after the user's
overrides. The engine adds what every finding carries: the rule's id, severity, remedy and docs
page, and the evidence as event ids, time ranges and viewer deep links.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from kinetoscope.analysis import prepared
from kinetoscope.analysis.tables import Tables, per_rank, reusing
from kinetoscope.findings.ranks import RankData, viewer_link

SEVERITIES = ("info", "low", "medium", "high")
SCHEMA_VERSION = 2  # 2: groups across ranks; each finding's window; each evidence's at_ns
DOCS_PAGE = "docs/findings.md"
EVIDENCE_EVENTS = 5
NS_PER_MS = 1_000_000


@dataclass(frozen=True)
class Observation:
    """What a rule saw on one rank: numbers, the rows that show it, and the time it costs."""

    summary: str
    seen: dict[str, Any]
    evidence_rows: np.ndarray
    gain_ns: int
    gain_basis: str
    severity: str | None = None
    # (start_ns, end_ns) per evidence row, when the evidence is a time range (a gap) rather than the row itself
    ranges: np.ndarray | None = None


@dataclass(frozen=True)
class Evidence:
    event_id: int
    name: str
    start_ns: int
    end_ns: int
    link: str
    at_ns: int = 0  # ``start_ns`` from the dataset's first event, the viewer's time origin


@dataclass(frozen=True)
class Finding:
    rule: str
    title: str
    severity: str
    run: str
    rank: int
    summary: str
    seen: dict[str, Any]
    evidence: list[Evidence]
    gain_ns: int
    gain_basis: str
    remedy: str
    docs: str
    wall_ns: int = 0  # the rank's window: from its first event's start to its last one's end
    steps: int = 0  # the rank's profiled steps (0: none)
    ranks_in_run: int = 1  # how many ranks its run has
    cannot_judge: str = ""  # why the rule abstained on this rank ("": it judged)

    @property
    def share_pct(self) -> float:
        """The estimated gain as a share of the rank's window."""
        return 100 * self.gain_ns / self.wall_ns if self.wall_ns > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        found = {
            "rule": self.rule,
            "title": self.title,
            "severity": self.severity,
            "run": self.run,
            "rank": self.rank,
            "summary": self.summary,
            "seen": self.seen,
            "evidence": [e.__dict__ for e in self.evidence],
            "gain": {"ns": self.gain_ns, "basis": self.gain_basis},
            "remedy": self.remedy,
            "docs": self.docs,
            "window": {"ns": self.wall_ns, "steps": self.steps},
        }
        if self.cannot_judge:
            found["cannot_judge"] = self.cannot_judge
        return found


RuleFn = Callable[[RankData, Mapping[str, float]], list[Observation]]
# A rule across the ranks of one run: it sees every rank of the run and says which rank each observation is of.
RunRuleFn = Callable[[list[RankData], Mapping[str, float]], list[tuple[RankData, Observation]]]


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    severity: str
    thresholds: dict[str, float]
    remedy: str
    fn: RuleFn | None = field(repr=False, default=None)
    needs: tuple[str, ...] = ()  # what the rule needs of the data (``RankData.cannot_judge``)
    run_fn: RunRuleFn | None = field(repr=False, default=None)  # set instead of ``fn`` for a rule across ranks

    def observe(self, ranks: list[RankData], limits: Mapping[str, float]) -> list[tuple[RankData, Observation]]:
        """This rule's observations on the ranks of one run."""
        if self.run_fn is not None:
            return self.run_fn(ranks, limits)
        assert self.fn is not None
        return [(data, seen) for data in ranks for seen in self.fn(data, limits)]

    @property
    def docs(self) -> str:
        return f"{DOCS_PAGE}#{self.id.replace('_', '-')}"


RULES: dict[str, Rule] = {}


def rule(
    rule_id: str, title: str, severity: str, remedy: str, *, needs: tuple[str, ...] = (), **thresholds: float
) -> Callable[[RuleFn], RuleFn]:
    """Register ``fn`` as the rule ``rule_id`` with its default severity and thresholds; on a rank
    whose data lacks what ``needs`` names (``RankData.cannot_judge``) the rule abstains."""

    def register(fn: RuleFn) -> RuleFn:
        assert severity in SEVERITIES and rule_id not in RULES
        RULES[rule_id] = Rule(rule_id, title, severity, dict(thresholds), remedy, fn=fn, needs=needs)
        return fn

    return register


def run_rule(
    rule_id: str, title: str, severity: str, remedy: str, **thresholds: float
) -> Callable[[RunRuleFn], RunRuleFn]:
    """Register ``fn`` as the rule ``rule_id`` across the ranks of each run."""

    def register(fn: RunRuleFn) -> RunRuleFn:
        assert severity in SEVERITIES and rule_id not in RULES
        RULES[rule_id] = Rule(rule_id, title, severity, dict(thresholds), remedy, run_fn=fn)
        return fn

    return register


class ThresholdError(ValueError):
    """An override names no rule or threshold, or its value is not a number."""


def parse_overrides(items: Iterable[str]) -> dict[str, dict[str, float]]:
    """``["sync_in_step.min_calls=5"]`` -> ``{"sync_in_step": {"min_calls": 5.0}}``, checked against RULES."""
    out: dict[str, dict[str, float]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        rule_id, dot, name = key.strip().partition(".")
        if not sep or not dot:
            raise ThresholdError(f"{item!r}: expected RULE.THRESHOLD=VALUE")
        if rule_id not in RULES or name not in RULES[rule_id].thresholds:
            known = ", ".join(f"{r.id}.{t}" for r in RULES.values() for t in r.thresholds)
            raise ThresholdError(f"{item!r}: no such threshold; choose from {known}")
        try:
            out.setdefault(rule_id, {})[name] = float(value)
        except ValueError:
            raise ThresholdError(f"{item!r}: {value!r} is not a number") from None
    return out


def run_rules(
    tables: Tables,
    overrides: Mapping[str, Mapping[str, float]] | None = None,
    rules: Iterable[Rule] | None = None,
    *,
    t0_ns: int | None = None,
) -> list[Finding]:
    """Every finding of ``rules`` (default: all) on every rank, the largest estimated gain first.

    Deep links count from ``t0_ns``, the dataset's first event as the viewer does (default: the
    first of ``tables``; pass the whole dataset's when ``tables`` hold one run of several)."""
    chosen = list(rules if rules is not None else RULES.values())
    with reusing():  # the summary's cache where it runs inside one; else one for these rules' shared work
        tables = prepared(tables)  # shared dictionaries, and the input shapes read from args once for every rule
        events = tables["events"]
        if t0_ns is None:
            t0_ns = int(np.min(events.column("ts_ns").to_numpy())) if events.num_rows else 0
        findings: list[Finding] = []
        for ranks in _runs(tables, t0_ns).values():
            findings += [found for one in chosen for found in _observed(one, ranks, overrides)]
    return ranked(findings)


RankFindings = dict[str, list[Finding]]  # rule id -> its findings on one rank


def rank_findings(
    tables: Tables, overrides: Mapping[str, Mapping[str, float]] | None = None, rules: Iterable[Rule] | None = None
) -> RankFindings:
    """The findings of the rules of ``rules`` that see one rank at a time, on the one rank of
    ``tables``, by rule; their deep links count from 0 until ``combined_findings`` sets them."""
    chosen = [one for one in (rules if rules is not None else RULES.values()) if one.run_fn is None]
    ranks = [data for found in _runs(prepared(tables), 0).values() for data in found]
    return {one.id: _observed(one, ranks, overrides) for one in chosen}


def combined_findings(
    per_rank_found: Mapping[tuple[str, int], RankFindings],
    run_tables: Tables,
    overrides: Mapping[str, Mapping[str, float]] | None = None,
    rules: Iterable[Rule] | None = None,
    *,
    t0_ns: int,
) -> list[Finding]:
    """``run_rules`` over a dataset from its ranks' ``rank_findings`` (by (run, rank)) and, for the
    rules across ranks, the events they read of each rank (``run_tables``: ``per_rank.run_rows``,
    with the sessions and warnings), as ``run_rules`` over every rank at once gives them."""
    chosen = list(rules if rules is not None else RULES.values())
    findings: list[Finding] = []
    for ranks in _runs(prepared(run_tables), t0_ns).values():
        for one in chosen:
            if one.run_fn is not None:
                findings += _observed(one, ranks, overrides)
            else:
                found = (per_rank_found.get((data.run, data.rank), {}).get(one.id, []) for data in ranks)
                findings += [_relinked(finding, t0_ns, len(ranks)) for each in found for finding in each]
    return ranked(findings)


def ranked(findings: list[Finding]) -> list[Finding]:
    """``findings``, the largest estimated gain first (then the most severe, by rule, run and rank)."""
    severity_rank = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(findings, key=lambda f: (-f.gain_ns, -severity_rank[f.severity], f.rule, f.run, f.rank))


def _runs(tables: Tables, t0_ns: int) -> dict[str, list[RankData]]:
    """Each run's ranks, in (run, rank) order."""
    runs: dict[str, list[RankData]] = {}
    for (run, rank), rank_events in per_rank(tables["events"]):
        runs.setdefault(run, []).append(RankData(run, rank, rank_events, tables, t0_ns))
    return runs


def _observed(
    one: Rule, ranks: list[RankData], overrides: Mapping[str, Mapping[str, float]] | None
) -> list[Finding]:
    limits = {**one.thresholds, **(overrides or {}).get(one.id, {})}
    if not one.needs:
        return [_finding(one, data, seen, len(ranks)) for data, seen in one.observe(ranks, limits)]
    found: list[Finding] = []
    for data in ranks:
        why = data.cannot_judge(one.needs)
        if why is not None:
            found.append(_abstained(one, data, *why, ranks_in_run=len(ranks)))
        else:
            found += [_finding(one, data, seen, len(ranks)) for _, seen in one.observe([data], limits)]
    return found


def _abstained(one: Rule, data: RankData, why: str, remedy: str, *, ranks_in_run: int) -> Finding:
    """The finding of a rule that cannot judge this rank's data: it says why, and saves no time."""
    summary, seen = f"cannot judge: {why}", {"cannot_judge": why}
    return Finding(
        one.id, one.title, "info", data.run, data.rank, summary, seen, [], 0, "none: not judged", remedy, one.docs,
        wall_ns=data.wall_ns, steps=data.step_count, ranks_in_run=ranks_in_run, cannot_judge=why,
    )  # fmt: skip


def _relinked(finding: Finding, t0_ns: int, ranks_in_run: int) -> Finding:
    """``finding`` with its evidence's deep links counted from ``t0_ns``, of a run of ``ranks_in_run`` ranks."""
    evidence = [
        replace(e, link=viewer_link(t0_ns, e.start_ns, e.end_ns, e.event_id), at_ns=e.start_ns - t0_ns)
        for e in finding.evidence
    ]
    return replace(finding, evidence=evidence, ranks_in_run=ranks_in_run)


def _finding(one: Rule, data: RankData, seen: Observation, ranks_in_run: int) -> Finding:
    """``seen`` as a finding; its gain never exceeds the rank's window (a fix cannot save more
    time than the trace holds), and the basis says when it was cut to it."""
    gain_ns, basis = int(seen.gain_ns), seen.gain_basis
    if gain_ns > data.wall_ns:
        gain_ns, basis = data.wall_ns, f"{basis} (at most the rank's window, {data.wall_ns / NS_PER_MS:.3f} ms)"
    return Finding(
        rule=one.id,
        title=one.title,
        severity=_severity(one, data, seen),
        run=data.run,
        rank=data.rank,
        summary=seen.summary,
        seen=seen.seen,
        evidence=_evidence(data, seen.evidence_rows, seen.ranges),
        gain_ns=gain_ns,
        gain_basis=basis,
        remedy=one.remedy,
        docs=one.docs,
        wall_ns=data.wall_ns,
        steps=data.step_count,
        ranks_in_run=ranks_in_run,
    )


def _severity(one: Rule, data: RankData, seen: Observation) -> str:
    """The rule's own call where it makes one; else, for a finding that costs time, by the share of
    the rank's window it costs (``severity_by_share``: a 2 ms compilation in a 90 ms window is
    low, not high); else the rule's default."""
    if seen.severity is not None:
        return seen.severity
    if seen.gain_ns > 0 and one.severity != "info":
        return severity_by_share(int(seen.gain_ns), data.wall_ns)
    return one.severity


def _evidence(data: RankData, rows: np.ndarray, ranges: np.ndarray | None) -> list[Evidence]:
    """The longest evidence rows or ranges (at most EVIDENCE_EVENTS), in time order."""
    if not len(rows):
        return []
    gaps = ranges is not None
    if ranges is None:
        ranges = np.stack([data.ints("ts_ns")[rows], data.ends(rows)], axis=1)
    longest = np.argsort(-(ranges[:, 1] - ranges[:, 0]), kind="stable")[:EVIDENCE_EVENTS]
    picked = longest[np.argsort(ranges[longest, 0], kind="stable")]
    out = []
    for at in picked.tolist():
        row, start, end = int(rows[at]), int(ranges[at, 0]), int(ranges[at, 1])
        event_id = int(data.ints("id")[row])
        link = viewer_link(data.t0_ns, start, end, event_id)
        name = f"idle before {data.name_of(row)}" if gaps else str(data.name_of(row))
        out.append(Evidence(event_id, name, start, end, link, start - data.t0_ns))
    return out


def at_least(severity: str, value: str) -> bool:
    """Whether ``severity`` is ``value`` or worse."""
    return SEVERITIES.index(severity) >= SEVERITIES.index(value)


def severity_by_share(gain_ns: int, wall_ns: int, default: str = "low") -> str:
    """``high`` when the gain is at least 10% of the rank's wall time, ``medium`` from 3%, else ``default``."""
    share = gain_ns / wall_ns if wall_ns > 0 else 0.0
    return "high" if share >= 0.10 else "medium" if share >= 0.03 else default

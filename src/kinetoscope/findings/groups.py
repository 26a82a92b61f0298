"""Findings grouped across ranks: one group per run, rule and cause, with how many of the run's
ranks show it, the range of their figures, and the worst rank's evidence first.

A rule that fires on every rank of an 8-rank job gives eight findings; a reader wants one line that
says "on 8 of 8 ranks, 5.5-11.1 ms per step" and where to look first. The findings themselves are
kept as they are (``findings --json`` lists both); a group points at its members by position.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kinetoscope.findings.engine import SEVERITIES, Evidence, Finding

NS_PER_MS = 1_000_000
GROUP_EVIDENCE = 5  # evidence items a group keeps: the worst rank's, then one of each next-worst rank


@dataclass(frozen=True)
class RankedEvidence:
    """One piece of a group's evidence, with the rank it is of."""

    run: str
    rank: int
    evidence: Evidence

    def to_json(self) -> dict[str, Any]:
        return {"run": self.run, "rank": self.rank, **self.evidence.__dict__}


@dataclass(frozen=True)
class Group:
    """The findings of one rule and cause on the ranks of one run, the worst (largest gain) first."""

    members: tuple[int, ...]  # positions in the findings list, the worst first
    findings: tuple[Finding, ...]  # the same findings, in that order

    @property
    def worst(self) -> Finding:
        return self.findings[0]

    @property
    def cause(self) -> str:
        return cause_of(self.worst)

    @property
    def severity(self) -> str:
        return max((f.severity for f in self.findings), key=SEVERITIES.index)

    @property
    def ranks(self) -> list[int]:
        """The ranks that show it, the worst first, each once."""
        return list(dict.fromkeys(f.rank for f in self.findings))

    @property
    def per_step(self) -> bool:
        """Whether every member's rank has steps, so its figures read per step."""
        return all(f.steps > 0 for f in self.findings)

    def figures_ns(self) -> list[float]:
        """Each member's estimated gain, per step where ``per_step``."""
        return [f.gain_ns / f.steps if self.per_step else float(f.gain_ns) for f in self.findings]

    def headline(self) -> str:
        """``on 8 of 8 ranks, 5.5-11.1 ms per step (6.1-12.3% of the window)``; without a range for a
        finding that costs no time."""
        ranks = len(self.ranks)
        total = max(self.worst.ranks_in_run, ranks)
        where = f"on rank {self.worst.rank}" if total == 1 else f"on {ranks} of {total} ranks"
        if not any(f.gain_ns for f in self.findings):
            return where
        per = "per step" if self.per_step else "in the window"
        shares = [f.share_pct for f in self.findings]
        return f"{where}, {_durations(self.figures_ns())} {per} ({_span(shares, 1)}% of the window)"

    def evidence(self) -> list[RankedEvidence]:
        """The worst rank's evidence, then the first piece of each next-worst rank's, at most GROUP_EVIDENCE."""
        picked = [RankedEvidence(self.worst.run, self.worst.rank, e) for e in self.worst.evidence]
        for other in self.findings[1:]:
            picked += [RankedEvidence(other.run, other.rank, e) for e in other.evidence[:1]]
        return picked[:GROUP_EVIDENCE]

    def to_json(self) -> dict[str, Any]:
        worst, figures = self.worst, self.figures_ns()
        gains = [f.gain_ns for f in self.findings]
        return {
            "rule": worst.rule,
            "title": worst.title,
            "severity": self.severity,
            "run": worst.run,
            "cause": self.cause,
            "ranks": self.ranks,
            "ranks_in_run": max(worst.ranks_in_run, len(self.ranks)),
            "headline": self.headline(),
            "summary": worst.summary,
            "gain": {"worst_ns": gains[0], "min_ns": min(gains), "max_ns": max(gains), "basis": worst.gain_basis},
            "figure": {"per": "step" if self.per_step else "window", "min_ns": min(figures), "max_ns": max(figures)},
            "share_pct": {
                "min": min(f.share_pct for f in self.findings),
                "max": max(f.share_pct for f in self.findings),
            },
            "evidence": [e.to_json() for e in self.evidence()],
            "remedy": worst.remedy,
            "docs": worst.docs,
            "findings": list(self.members),
        }


def cause_of(finding: Finding) -> str:
    """What a finding is about within its rule, where one rule names several things on one rank:
    ``host`` for the host's memory, ``cannot judge: why`` where the rule abstained (never grouped with
    ranks it judged), else ``""`` (the rule itself)."""
    if finding.cannot_judge:
        return f"cannot judge: {finding.cannot_judge}"
    return "host" if finding.seen.get("device") == "host" else ""


def grouped(findings: list[Finding]) -> list[Group]:
    """``findings`` (ranked, the largest gain first) in groups by run, rule and cause, in the order
    of each group's worst member: the group with the largest gain first."""
    by_key: dict[tuple[str, str, str], list[int]] = {}
    for at, finding in enumerate(findings):
        by_key.setdefault((finding.run, finding.rule, cause_of(finding)), []).append(at)
    groups = []
    for positions in by_key.values():
        ordered = sorted(
            positions, key=lambda at: (-findings[at].gain_ns, -SEVERITIES.index(findings[at].severity), at)
        )
        groups.append(Group(tuple(ordered), tuple(findings[at] for at in ordered)))
    return groups


def duration_unit(values_ns: list[float]) -> tuple[float, str]:
    """(ns per unit, unit) to show ``values_ns`` in: ms, or µs or ns where the largest is under 1 ms or 1 µs."""
    top = max(values_ns, default=0.0)
    return (NS_PER_MS, "ms") if top >= NS_PER_MS else (1_000, "µs") if top >= 1_000 else (1, "ns")


def _durations(values_ns: list[float]) -> str:
    """``5.5-11.1 ms`` (or in µs or ns where the largest is under 1 ms or 1 µs)."""
    scale, unit = duration_unit(values_ns)
    return f"{_span(values_ns, scale)} {unit}"


def _span(values: list[float], scale: float) -> str:
    """``5.5-11.1`` (one decimal of ``values / scale``), or one figure where they round alike."""
    low, high = f"{min(values) / scale:.1f}", f"{max(values) / scale:.1f}"
    return low if low == high else f"{low}-{high}"

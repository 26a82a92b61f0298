"""Findings as a versioned JSON document (``docs/findings.schema.json``) and as plain text or
Markdown: grouped across ranks (``groups.py``), each piece of evidence with the rank, the event,
its time from the dataset's start and the ``kinetoscope view`` command that opens it there."""

from __future__ import annotations

import textwrap
from typing import IO, Any

from kinetoscope.findings.engine import SCHEMA_VERSION, Finding
from kinetoscope.findings.groups import Group, RankedEvidence, duration_unit, grouped
from kinetoscope.findings.ranks import view_window
from kinetoscope.render.values import middle, shorten

NS_PER_MS = 1_000_000
NS_PER_US = 1_000
EVIDENCE_SHOWN = 3  # evidence lines per group in the full text
PLACEHOLDER_PATH = "PATH"


def document(findings: list[Finding]) -> dict[str, Any]:
    """The JSON document: ``{"schema": "kinetoscope.findings", "version": N, "groups": [...],
    "findings": [...]}``; each group names its members by their position in ``findings``."""
    return {
        "schema": "kinetoscope.findings",
        "version": SCHEMA_VERSION,
        "groups": [g.to_json() for g in grouped(findings)],
        "findings": [f.to_json() for f in findings],
    }


def view_command(target: str, evidence: RankedEvidence) -> str:
    """``kinetoscope view TARGET --at START-END --event ID``: the viewer's timeline on the evidence
    (times in ms from the dataset's first event, as the viewer shows them), the event selected."""
    e = evidence.evidence
    t0_ns = e.start_ns - e.at_ns
    lo, hi = view_window(t0_ns, e.start_ns, e.end_ns)
    at = f"{lo // NS_PER_US / 1000:.3f}-{-(-hi // NS_PER_US) / 1000:.3f}"
    return f"kinetoscope view {target} --at {at} --event {e.event_id}"


def evidence_text(evidence: RankedEvidence, name_width: int = 40) -> str:
    """``rank 3, event 1234 ncclKernel_Se…RING at 12.345 ms``."""
    e = evidence.evidence
    return f"rank {evidence.rank}, event {e.event_id} {middle(e.name, name_width)} at {e.at_ns / NS_PER_MS:,.3f} ms"


def write_text(
    findings: list[Finding], out: IO[str], *, markdown: bool = False, target: str = PLACEHOLDER_PATH
) -> None:
    """One block per group of findings (rule and cause across ranks), the largest estimated gain first."""
    title = "## Findings" if markdown else "Findings"
    groups = grouped(findings)
    if not groups:
        out.write(f"{title}: none\n\n")
        return
    out.write(f"{title} ({_counted(groups, findings)}, largest estimated gain first)\n\n")
    for number, group in enumerate(groups, 1):
        _write_group(number, group, out, markdown, target)


def _counted(groups: list[Group], findings: list[Finding]) -> str:
    ranks = {(f.run, f.rank) for f in findings}
    if len(groups) == len(findings):
        return str(len(groups))
    return f"{len(groups)}, from {len(findings)} findings on {len(ranks)} ranks"


def _write_group(number: int, group: Group, out: IO[str], markdown: bool, target: str) -> None:
    worst = group.worst
    bullet = "- " if markdown else "   "
    gain = f"~{worst.gain_ns / NS_PER_MS:.3f} ms" if worst.gain_ns else "no time"
    cause = f", {group.cause}" if group.cause else ""
    said = [
        f"where: {group.headline()}",
        f"seen (rank {worst.rank}): {worst.summary}",
        f"gain: {gain} on rank {worst.rank} ({worst.gain_basis})",
        *([f"by rank: {_by_rank(group)}"] if len(group.findings) > 1 and worst.gain_ns else []),
        f"remedy: {worst.remedy} See {worst.docs}",
    ]
    out.write(f"{number}. [{group.severity}] {worst.title} ({worst.rule}{cause}, {worst.run})\n")
    for line in said:
        out.write(f"{bullet}{line}\n" if markdown else _wrapped(line, bullet))
    for evidence in group.evidence()[:EVIDENCE_SHOWN]:
        command = view_command(target, evidence)
        if markdown:
            out.write(f"{bullet}evidence: {evidence_text(evidence)}: `{command}`\n")
        else:
            out.write(f"{bullet}evidence: {evidence_text(evidence)}:\n{bullet}  {command}\n")
    out.write("\n")


TEXT_WIDTH = 100  # prose lines of the text form are wrapped at this width (commands never are)


def _wrapped(line: str, indent: str) -> str:
    return textwrap.fill(line, TEXT_WIDTH, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_on_hyphens=False, break_long_words=False) + "\n"  # fmt: skip


def _by_rank(group: Group) -> str:
    figures = group.figures_ns()
    scale, unit = duration_unit(figures)
    shown = ", ".join(f"{f.rank}: {x / scale:.1f}" for f, x in zip(group.findings, figures, strict=True))
    return f"{shown} {unit}{'/step' if group.per_step else ''}"


def screen_lines(findings: list[Finding], target: str, width: int, most: int) -> list[str]:
    """The findings in a few lines for the one-screen summary: per group (at most ``most``) its
    title and where, the worst rank's summary, and the command that opens its first evidence."""
    groups = grouped(findings)
    if not groups:
        return ["Findings: none (no rule fired; docs/findings.md lists them)"]
    lines = [shorten(f"Findings ({_counted(groups, findings)}, largest estimated gain first)", width)]
    for number, group in enumerate(groups[:most], 1):
        worst = group.worst
        lines.append(shorten(f"{number}. [{group.severity}] {worst.title} ({worst.rule})", width))
        said = f": {worst.summary}" if worst.ranks_in_run == 1 else f"; rank {worst.rank}: {worst.summary}"
        lines.append(shorten(f"   {group.headline()}{said}", width))
        shown = group.evidence()
        if shown:
            lines.append(f"   {view_command(target, shown[0])}")
    if len(groups) > most:
        lines.append(f"   ... {len(groups) - most} more: --section findings")
    return lines

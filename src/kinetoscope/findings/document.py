"""Findings as a versioned JSON document (``docs/findings.schema.json``) and as plain text."""

from __future__ import annotations

from typing import IO, Any

from kinetoscope.findings.engine import SCHEMA_VERSION, Finding

NS_PER_MS = 1_000_000


def document(findings: list[Finding]) -> dict[str, Any]:
    """The JSON document: ``{"schema": "kinetoscope.findings", "version": N, "findings": [...]}``."""
    return {"schema": "kinetoscope.findings", "version": SCHEMA_VERSION, "findings": [f.to_json() for f in findings]}


def write_text(findings: list[Finding], out: IO[str], *, markdown: bool = False) -> None:
    """One block per finding, the largest estimated gain first."""
    title = "## Findings" if markdown else "Findings"
    if not findings:
        out.write(f"{title}: none\n\n")
        return
    out.write(f"{title} ({len(findings)}, largest estimated gain first)\n\n")
    for number, finding in enumerate(findings, 1):
        where = f"{finding.run} rank {finding.rank}"
        gain = f"~{finding.gain_ns / NS_PER_MS:.3f} ms" if finding.gain_ns else "no time"
        bullet = "- " if markdown else "   "
        out.write(f"{number}. [{finding.severity}] {finding.title} ({finding.rule}, {where})\n")
        out.write(f"{bullet}seen: {finding.summary}\n")
        out.write(f"{bullet}gain: {gain} ({finding.gain_basis})\n")
        out.write(f"{bullet}remedy: {finding.remedy} See {finding.docs}\n")
        for evidence in finding.evidence[:3]:
            out.write(f"{bullet}evidence: event {evidence.event_id} {evidence.name[:60]} {evidence.link}\n")
        out.write("\n")

"""Findings: deterministic diagnoses over a dataset, each with numbers, evidence, an estimated gain
and a remedy (``docs/findings.md``).

``run_rules(tables)`` runs every registered rule on every rank and returns the findings with the
largest estimated gain first; ``NEEDED_COLUMNS`` says what to load.
"""

from __future__ import annotations

# Importing the rule modules registers their rules in RULES.
from kinetoscope.findings import (  # noqa: F401
    capacity_rules,
    cross_rank_rules,
    device_rules,
    gil_rules,
    gloo_rules,
    host_rules,
    loader_rules,
    recompile_rules,
    roofline_rules,
    thread_rules,
)
from kinetoscope.findings.engine import (
    RULES,
    SCHEMA_VERSION,
    SEVERITIES,
    Finding,
    Rule,
    ThresholdError,
    at_least,
    combined_findings,
    parse_overrides,
    rank_findings,
    run_rules,
)

EVENT_COLUMNS = (
    *("run", "rank", "id", "kind", "name", "ts_ns", "dur_ns", "depth", "op_id", "launch_id"),
    *("correlation", "self_ns", "step", "args", "layer", "tid", "device", "collective"),
)
NEEDED_COLUMNS: dict[str, tuple[str, ...] | None] = {
    "events": EVENT_COLUMNS,
    "sessions": ("run", "rank", "dropped_events", "device_memory", "device_name", "host"),
    "warnings": ("run", "rank", "kind", "count"),
    "counters": ("run", "rank", "name", "ts_ns", "value", "unit", "device"),
}

__all__ = [
    "NEEDED_COLUMNS",
    "RULES",
    "SCHEMA_VERSION",
    "SEVERITIES",
    "Finding",
    "Rule",
    "ThresholdError",
    "at_least",
    "combined_findings",
    "parse_overrides",
    "rank_findings",
    "run_rules",
]

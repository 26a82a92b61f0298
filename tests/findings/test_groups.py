"""Findings grouped across ranks (findings/groups.py), their severity by the share of the window
they cost, and their evidence as a reader uses it: rank, event, time and a `kinetoscope view` command."""

from __future__ import annotations

import io

import pyarrow as pa

from kinetoscope.findings import RULES, run_rules
from kinetoscope.findings.document import document, screen_lines, write_text
from kinetoscope.findings.groups import grouped

from ..json_schema import validate
from .built import Trace
from .test_public_traces import SCHEMA

MS = 1_000_000


def compiling_ranks(compile_ms: list[int], window_ms: int = 90) -> dict[str, pa.Table]:
    """One rank per item: a ``window_ms`` step holding a compilation of that many ms, 10 ms in."""
    traces = []
    for rank, ms in enumerate(compile_ms):
        trace = Trace()
        trace.add("op", "ProfilerStep#1", 0, window_ms * MS, step=1, rank=rank)
        trace.add("op", "_compile.compile_inner (dynamo_timed)", 10 * MS, ms * MS, step=1, rank=rank, depth=1)
        traces.append(trace.tables())
    events = pa.concat_tables([t["events"] for t in traces])
    sessions = pa.concat_tables([t["sessions"].set_column(1, "rank", pa.array([r], pa.int32()))
                                 for r, t in enumerate(traces)])  # fmt: skip
    return {**traces[0], "events": events, "sessions": sessions}


def test_a_short_compilation_in_a_long_window_is_not_high() -> None:
    # GIVEN a 2 ms compilation in a 90 ms window (2.2%) and a 10 ms one (11%)
    low, high = run_rules(compiling_ranks([2, 10]), rules=[RULES["compile_in_window"]])[::-1]
    # THEN its severity follows the share of the window it costs: low below 3%, high from 10%
    assert (low.rank, low.severity) == (0, "low") and (high.rank, high.severity) == (1, "high")


def test_one_group_per_rule_across_ranks_with_its_rank_count_and_range() -> None:
    # GIVEN a compilation on each of four ranks, 1-4 ms of a 90 ms step
    findings = run_rules(compiling_ranks([1, 2, 4, 3]), rules=[RULES["compile_in_window"]])
    # WHEN grouped
    (group,) = grouped(findings)
    # THEN one group says on how many ranks and the range of their figures, the worst rank first
    assert group.ranks == [2, 3, 1, 0] and group.worst.rank == 2
    assert group.headline() == "on 4 of 4 ranks, 1.0-4.0 ms per step (1.1-4.4% of the window)"
    assert group.severity == "medium"  # the worst rank's 4.4%
    assert [e.rank for e in group.evidence()] == [2, 3, 1, 0]  # the worst rank's evidence first


def test_the_document_lists_groups_and_every_finding_and_matches_its_schema() -> None:
    findings = run_rules(compiling_ranks([1, 2, 4, 3]), rules=[RULES["compile_in_window"]])
    found = document(findings)
    validate(found, SCHEMA)
    (group,) = found["groups"]
    assert [found["findings"][i]["rank"] for i in group["findings"]] == [2, 3, 1, 0]
    assert group["ranks"] == [2, 3, 1, 0] and group["ranks_in_run"] == 4 and group["figure"]["per"] == "step"
    assert found["findings"][0]["window"] == {"ns": 90 * MS, "steps": 1}
    assert found["findings"][0]["evidence"][0]["at_ns"] == 10 * MS


def test_evidence_names_rank_event_time_and_the_view_command_that_opens_it() -> None:
    findings = run_rules(compiling_ranks([1, 2, 4, 3]), rules=[RULES["compile_in_window"]])
    for markdown in (False, True):
        out = io.StringIO()
        write_text(findings, out, markdown=markdown, target="run/prof")
        text = out.getvalue()
        assert "Findings (1, from 4 findings on 4 ranks" in text
        assert "by rank: 2: 4.0, 3: 3.0, 1: 2.0, 0: 1.0 ms/step\n" in text
        # the place: 10 ms from the start, framed by 10% of the event and 1 µs either side
        evidence = "rank 2, event 2 _compile.compile_inner (dynamo_timed) at 10.000 ms"
        command = "kinetoscope view run/prof --at 9.599-14.401 --event 2"
        said = f"evidence: {evidence}: `{command}`\n" if markdown else f"evidence: {evidence}:\n     {command}\n"
        assert said in text
        assert "?page=" not in text and "token" not in text
    lines = screen_lines(findings, "run/prof", width=100, most=5)
    assert lines[1] == "1. [medium] Compilation inside the profiled window (compile_in_window)"
    assert lines[2].startswith("   on 4 of 4 ranks, 1.0-4.0 ms per step (1.1-4.4% of the window); rank 2: compilation")
    assert lines[3] == "   " + command and all(len(line) <= 100 for line in lines)


def test_the_view_command_opens_what_the_deep_link_opens() -> None:
    from kinetoscope.cli.view import place_query, time_range
    from kinetoscope.findings.document import view_command

    findings = run_rules(compiling_ranks([1, 2, 4, 3]), rules=[RULES["compile_in_window"]])
    for evidence in grouped(findings)[0].evidence():
        command = view_command("ds", evidence).split()
        at, event = time_range(command[command.index("--at") + 1]), int(command[command.index("--event") + 1])
        link = dict(part.split("=") for part in evidence.evidence.link.lstrip("?").split("&"))
        # the same range to the microsecond (the command's times are ms with three decimals), the same event
        assert at[0] <= int(link["start"]) < at[0] + 1_000 and at[1] - 1_000 < int(link["end"]) <= at[1]
        assert place_query(at, event).endswith(f"&sel={link['sel']}")

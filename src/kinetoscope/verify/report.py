"""Verify a profile tree before reading it: every session's checks plus those across sessions
(two processes claiming one rank; clocks of ranks that disagree).

Clock skew is measured two ways. Sessions on one instance share a clock, so the offset
between their realtime and monotonic clocks must agree; a difference means the realtime
clock was stepped during the run. Across instances, a collective completes at nearly the
same moment on every rank of its group, so the median difference of one rank's collective
end times from the others' (matched by process group, collective name and order) estimates
how far its clock is off.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from kinetoscope.model import collectives, matching
from kinetoscope.sessions.sources import SessionSource, discover
from kinetoscope.verify.session_checks import ERROR, NOTE, PROBLEM, Finding, SessionCheck, check_session

SKEW_TOLERANCE_NS = 2_000_000
MIN_MATCHED_COLLECTIVES = 3
OK, PROBLEMS, UNUSABLE = "ok", "problems", "unusable"


@dataclass
class VerifyReport:
    profile_dir: Path
    sessions: list[SessionCheck] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)  # across sessions

    def all_findings(self) -> list[Finding]:
        return [f for s in self.sessions for f in s.findings] + self.findings

    @property
    def status(self) -> str:
        if not any(s.usable for s in self.sessions):
            return UNUSABLE
        return PROBLEMS if any(f.severity in (ERROR, PROBLEM) for f in self.all_findings()) else OK

    @property
    def exit_code(self) -> int:
        return {OK: 0, PROBLEMS: 1, UNUSABLE: 2}[self.status]


def verify(profile_dir: Path, user_patterns: tuple[str, ...] = ()) -> VerifyReport:
    """The checks of every session of ``profile_dir``; ``user_patterns``: the user's communication
    patterns (``--categories``), whose kernels are collectives too (``model.collectives.of_user_kernel``)."""
    report = VerifyReport(profile_dir)
    if not profile_dir.is_dir():
        what = "not a directory" if profile_dir.exists() else "no such file or directory"
        report.findings.append(Finding(ERROR, "not_a_directory", "", str(profile_dir), what))
        return report
    sources = discover(profile_dir)
    if not sources:
        report.findings.append(_empty(profile_dir))
        return report
    report.sessions = [check_session(source, user_patterns) for source in sources]
    report.findings += _duplicate_ranks(sources)
    report.findings += _stepped_clocks(sources)
    report.findings += _collective_skew(report.sessions)
    return report


def _empty(profile_dir: Path) -> Finding:
    anything = any(profile_dir.iterdir())
    message = "no session directories (<instance>_pid_<pid>/<timestamp>/ with trace_info.pb)"
    if not anything:
        message = "the directory is empty: " + message
    remedy = (
        "profiling was not enabled or never exported: pass experimental_config=ProfileConfig(...) and "
        "on_trace_ready=Profiler(config).export_trace; for plain torch.profiler traces run `kinetoscope import`"
    )
    return Finding(ERROR, "no_sessions", "", str(profile_dir), message, remedy)


def _duplicate_ranks(sources: list[SessionSource]) -> list[Finding]:
    """Sessions of different processes that claim the same rank: a note when they belong to
    different jobs (ingest keeps each job in a run of its own), a problem when nothing tells them apart."""
    processes: dict[int, dict[tuple[str, int], str]] = defaultdict(dict)
    for source in sources:
        if source.info is not None and source.rank >= 0:
            ident = source.info.identity
            processes[source.rank][(ident.instance_id, ident.pid)] = ident.job_id
    findings = []
    for rank, claimants in sorted(processes.items()):
        if len(claimants) < 2:
            continue
        names = ", ".join(f"{instance} pid {pid}" for instance, pid in sorted(claimants))
        jobs = list(claimants.values())
        if all(jobs) and len(set(jobs)) == len(jobs):
            message = f"rank {rank} is claimed by {len(jobs)} jobs ({', '.join(sorted(jobs))}; {names})"
            findings.append(Finding(NOTE, "several_jobs", "", "", message, "ingest keeps each job in a run of its own"))
            continue
        message = f"rank {rank} is claimed by {len(claimants)} processes ({names})"
        findings.append(Finding(PROBLEM, "duplicate_rank", "", "", message, "profile each run into its own directory"))
    return findings


def _stepped_clocks(sources: list[SessionSource]) -> list[Finding]:
    """Sessions on one instance whose realtime-minus-monotonic offsets disagree."""
    offsets: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for source in sources:
        info = source.info
        if info is not None and info.start_clocks.monotonic_ns:
            offset = info.start_clocks.realtime_ns - info.start_clocks.monotonic_ns
            offsets[info.identity.instance_id].append((offset, source.session_id))
    findings = []
    for instance, found in sorted(offsets.items()):
        spread = max(o for o, _ in found) - min(o for o, _ in found)
        if spread > SKEW_TOLERANCE_NS:
            findings.append(
                Finding(
                    PROBLEM,
                    "clock_skew",
                    "",
                    "",
                    f"instance {instance}: realtime clock moved by {spread / 1e6:.1f} ms between sessions (NTP step?)",
                    "timelines of these sessions may not line up exactly",
                )
            )
    return findings


def _collective_skew(checks: list[SessionCheck]) -> list[Finding]:
    """Clock agreement between ranks, from the end times of collectives that end together, matched
    across ranks by ``model.matching``: per job, since two jobs'
    ranks share no collective. Says so when ranks were there but nothing could be matched."""
    jobs: dict[str, list[SessionCheck]] = defaultdict(list)
    for check in checks:
        if check.scan is not None and check.source.rank >= 0:
            info = check.source.info
            jobs[info.identity.job_id if info is not None else ""].append(check)
    findings = []
    for job, members in sorted(jobs.items()):
        label = f"job {job}: " if len(jobs) > 1 else ""
        findings += _job_skew(members, label)
    return findings


def _job_skew(checks: list[SessionCheck], label: str) -> list[Finding]:
    arrivals = []
    for check in checks:
        assert check.scan is not None
        arrivals += check.scan.collective_rows(check.source.rank)
    offsets: dict[int, list[int]] = defaultdict(list)
    for (_, collective, _, _), by_rank in matching.pair(arrivals).items():
        if len(by_rank) >= 2 and collective in collectives.ENDS_TOGETHER:
            median = statistics.median(a.end_ns for a in by_rank.values())
            for rank, arrival in by_rank.items():
                offsets[rank].append(int(arrival.end_ns - median))
    skews = {rank: int(statistics.median(v)) for rank, v in offsets.items() if len(v) >= MIN_MATCHED_COLLECTIVES}
    findings = [
        Finding(
            PROBLEM,
            "clock_skew",
            "",
            "",
            f"{label}rank {rank}: collectives end {skew / 1e6:+.1f} ms from the other "
            f"ranks' (median over {len(offsets[rank])} collectives)",
            "synchronise host clocks (NTP/PTP); cross-rank timelines are shifted by this much",
        )
        for rank, skew in sorted(skews.items())
        if abs(skew) > SKEW_TOLERANCE_NS
    ]
    if skews and not findings:
        worst = max(abs(s) for s in skews.values()) / 1e6
        message = f"{label}{len(skews)} ranks' collective end times agree within {worst:.3f} ms"
        findings.append(Finding(NOTE, "clock_agreement", "", "", message))
    ranks = {check.source.rank for check in checks}
    if len(ranks) >= 2 and len(skews) < len(ranks):
        unchecked = sorted(ranks - set(skews))
        message = (f"{label}clocks of rank(s) {', '.join(map(str, unchecked))} could not be checked: fewer than "
                   f"{MIN_MATCHED_COLLECTIVES} collectives matched across ranks (by process group and Seq, or by "
                   "aligned order)")
        findings.append(Finding(NOTE, "clock_unchecked", "", "", message))
    return findings

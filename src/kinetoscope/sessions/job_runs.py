"""Which run each session of a profile tree goes into: one run per job the sessions name.

Capture records a job id (``Identity.job_id``: torchrun's rendezvous id, a batch scheduler's job
id, or the rendezvous address). When a tree holds sessions of one job, or names none (imported
traces, older captures), every session goes into the tree's run, as always. When it holds several
jobs (two torchrun launches written into one directory), they are kept apart: the earliest job
keeps the run's name and each later one gets ``<run>.<job>``, so that one rank's sessions of two
jobs are never merged. Sessions that name no job stay in the tree's run, unless one rank is
claimed by several processes (two jobs' traces imported into one tree): then each rank's
processes are numbered in the order they started (``model.runs.launches``) and each launch is a
job of its own (``launch-1``, ``launch-2``, ...).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from kinetoscope.dataset import directory
from kinetoscope.model import runs as model_runs
from kinetoscope.sessions.sources import SessionSource

_UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-", re.IGNORECASE)
_LABEL_CHARS = 24


@dataclass(frozen=True)
class JobRuns:
    """The run of each session (by session id), and the jobs found, earliest first."""

    runs: dict[str, str]
    jobs: list[tuple[str, str, str]]  # (job id, where it came from, run)

    @property
    def names(self) -> list[str]:
        return sorted(set(self.runs.values()))


def job_of(source: SessionSource) -> tuple[str, str]:
    """(job id, source of the id) a session recorded; ("", "") when none."""
    ident = source.info.identity if source.info is not None else None
    return (ident.job_id, ident.job_id_source) if ident is not None else ("", "")


def assign_runs(sources: Iterable[SessionSource], base: str) -> JobRuns:
    """The run of every session of a tree whose run is named ``base``."""
    sources = list(sources)
    first_ns: dict[str, int] = {}
    origin: dict[str, str] = {}
    launch = _launches(sources)
    for source in sources:
        job, where = launch.get(source.session_id) or job_of(source)
        if job:
            first_ns[job] = min(first_ns.get(job, _start_ns(source)), _start_ns(source))
            origin[job] = where
    ordered = sorted(first_ns, key=lambda job: (first_ns[job], job))
    names = _run_names(ordered, base)
    runs = {
        source.session_id: names.get((launch.get(source.session_id) or job_of(source))[0], base) for source in sources
    }
    return JobRuns(runs, [(job, origin[job], names[job]) for job in ordered])


LAUNCH_ORIGIN = "several processes claim one rank"


def _launches(sources: list[SessionSource]) -> dict[str, tuple[str, str]]:
    """(job, origin) of the sessions naming no job, where one rank is claimed by several processes."""
    claims = [
        model_runs.RankClaim(
            s.session_id, s.rank, int(s.info.identity.world_size), s.info.identity.hostname or
            s.info.identity.instance_id, int(s.info.identity.pid), _start_ns(s)
        )
        for s in sources
        if s.info is not None and s.info.HasField("identity") and s.info.identity.rank_known and not job_of(s)[0]
    ]
    return {session: (f"launch-{n}", LAUNCH_ORIGIN) for session, n in model_runs.launches(claims).items()}


def _start_ns(source: SessionSource) -> int:
    return int(source.info.start_clocks.realtime_ns) if source.info is not None else 0


def _run_names(jobs: list[str], base: str) -> dict[str, str]:
    if len(jobs) < 2:
        return dict.fromkeys(jobs, base)
    names = {jobs[0]: base}
    for job in jobs[1:]:
        name = directory.run_name(f"{base}.{_label(job)}")
        names[job] = name if name not in names.values() else directory.run_name(f"{base}.{job}")
    return names


def _label(job: str) -> str:
    """A short readable part of a job id: a uuid's first block, else the id cut to a few characters."""
    return job[:8] if _UUID_RE.match(job) else job[:_LABEL_CHARS]


def is_run_of_tree(run: str, base: str) -> bool:
    """Whether ``run`` is the tree's run or one of its later jobs' runs (``<base>.<job>``)."""
    return run == base or run.startswith(base + ".")

"""One session ingested wherever it runs (a local worker, a cluster worker), with its files read and its
parts written where they lie.

A session on an object store is copied to a local temporary directory first (ingest reads a trace in one
pass, and a local copy keeps that pass and its spill files off the network); parts for a dataset on an
object store are written locally and uploaded, each as one object, so a reader never sees half a part.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from kinetoscope._processes import scratch_folder
from kinetoscope.dataset.storage import open_location
from kinetoscope.ingest.session.session_ingest import SessionJob, SessionOutcome, ingest_session
from kinetoscope.sessions.sources import read_info

SESSION_SCRATCH_PREFIX = "kinetoscope-session-"  # + pid + "-...": a session staged from or for an object store


def run_job(job: SessionJob) -> SessionOutcome:
    """Ingest ``job``'s session into its dataset; what the executors of ingest call."""
    if not job.source_url and not job.dataset_url:
        return ingest_session(job)
    with scratch_folder(SESSION_SCRATCH_PREFIX) as scratch:
        return _run_staged(job, scratch)


def _run_staged(job: SessionJob, scratch: Path) -> SessionOutcome:
    source = job.source
    if job.source_url:
        local = scratch / "session"
        open_location(job.source_url).download_tree(local)
        info, problem = read_info(local)
        source = replace(source, path=local, info=info, info_problem=problem, location=job.source_url)
    dataset = scratch / "dataset" if job.dataset_url else job.dataset
    outcome = ingest_session(replace(job, source=source, dataset=dataset))
    if job.dataset_url:
        target = open_location(job.dataset_url)
        for part in outcome.parts:
            target.upload(dataset / part, part)
    return outcome

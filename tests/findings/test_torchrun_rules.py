"""Rules across ranks on real torchrun jobs (gloo on CPU): a rank that sleeps in every step is the
straggler the others wait for in their all_reduce."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from kinetoscope.cli import main
from kinetoscope.findings import NEEDED_COLUMNS, RULES, run_rules
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from ..torchrun import job_failed, run_torchrun

pytestmark = pytest.mark.slow
STEPS = 5
WORK_S = 0.1
# Each step: a small matmul and WORK_S of other work (a sleep, so that ranks sharing a loaded CPU stay
# balanced), then an all_reduce; the rank given as argv[2] works twice as long. The
# profilers start in a warm-up step: starting one inside the window delays that rank's first
# collective by the profiler's start-up, which the other ranks would wait for.
JOB = textwrap.dedent(
    f"""
    import sys, time, torch
    import torch.distributed as dist
    from torch.profiler import profile, schedule
    import kinetoscope
    from kinetoscope import ProfileConfig, ProfileMode, Profiler

    dist.init_process_group("gloo")
    rank, slow = dist.get_rank(), int(sys.argv[2])
    config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=sys.argv[1])
    exporter = Profiler(config)
    a, t = torch.randn(64, 64), torch.randn(1024)
    dist.all_reduce(t)
    with profile(activities=kinetoscope.activities(), experimental_config=config,
                 schedule=schedule(wait=1, warmup=1, active={STEPS}, repeat=1),
                 on_trace_ready=exporter.export_trace) as prof:
        for _ in range({STEPS} + 2):
            a @ a
            time.sleep({WORK_S} * (2 if rank == slow else 1))
            dist.all_reduce(t)
            prof.step()
    dist.barrier()
    dist.destroy_process_group()
    """
)


def run_job(tmp_path: Path, ranks: int, slow_rank: int) -> dict:
    """Run the job on ``ranks`` ranks with ``slow_rank`` sleeping (-1: none), ingest it, load what the rules read."""
    script = tmp_path / "job.py"
    script.write_text(JOB)
    done = run_torchrun(script, ranks, str(tmp_path / "prof"), str(slow_rank))
    assert done.returncode == 0, job_failed(done)
    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")).status == "ok"
    with open_dataset(tmp_path / "ds") as ds:
        return ds.load(NEEDED_COLUMNS)


def test_the_rank_that_works_longer_is_the_straggler_and_the_other_waits_for_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # GIVEN two gloo ranks, rank 1 working 100 ms longer than rank 0 before each step's all_reduce
    tables = run_job(tmp_path, 2, slow_rank=1)
    # (summarised rank by rank, the document is the one made of both ranks at once)
    documents = []
    for how in ("--by-rank", "--no-by-rank"):
        capsys.readouterr()
        assert main(["summary", str(tmp_path / "ds"), "--json", how]) == 0
        documents.append(capsys.readouterr().out)
    assert documents[0] == documents[1]
    assert {f["rule"] for f in json.loads(documents[0])["findings"]["findings"]} >= {"straggler", "gloo_wait"}
    found = run_rules(tables, rules=[RULES["straggler"], RULES["gloo_wait"]])
    # THEN the straggler is rank 1, rank 0 losing most of the extra work each step waiting for it
    (straggler,) = [f for f in found if f.rule == "straggler"]
    assert straggler.rank == 1 and straggler.seen["ranks"] == 2
    assert straggler.gain_ns >= 0.5 * STEPS * WORK_S * 1e9
    # the evidence: the collectives the late rank held up (or, where none matched, its steps)
    names = [e.name for e in straggler.evidence]
    assert names and all("all_reduce" in n or "allreduce" in n or n.startswith("ProfilerStep#") for n in names), names
    # AND rank 0 alone waits in its all_reduces, for rank 1, as long as the starts measured by hand say
    (wait,) = [f for f in found if f.rule == "gloo_wait"]
    assert wait.rank == 0 and wait.seen["collectives"] == wait.seen["matched_on_every_rank"] == STEPS
    assert wait.seen["last_to_arrive"][0] == {"rank": 1, "collectives": STEPS}
    assert wait.gain_ns == wait.seen["wait_ns"] == hand_counted_wait_ns(tables, rank=0, peer=1)
    assert wait.seen["wait_ns"] >= 0.5 * STEPS * WORK_S * 1e9


def test_balanced_ranks_do_not_wait(tmp_path: Path) -> None:
    # GIVEN the same job with both ranks working 100 ms a step
    tables = run_job(tmp_path, 2, slow_rank=-1)
    # THEN no rank waits a tenth of its window in gloo collectives
    assert run_rules(tables, rules=[RULES["gloo_wait"]]) == []


def hand_counted_wait_ns(tables: dict, rank: int, peer: int) -> int:
    """The k-th all_reduce of ``rank`` against the k-th of ``peer``: time from its start to the later start."""
    rows = [r for r in tables["events"].select(["rank", "name", "ts_ns", "dur_ns"]).to_pylist()
            if r["name"] == "gloo:all_reduce"]  # fmt: skip
    mine = sorted((r["ts_ns"], r["dur_ns"]) for r in rows if r["rank"] == rank)
    theirs = sorted(r["ts_ns"] for r in rows if r["rank"] == peer)
    return sum(min(max(other - ts, 0), dur) for (ts, dur), other in zip(mine, theirs, strict=True))

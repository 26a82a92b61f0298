"""A real two-rank gloo job on the CPU, captured here: its collectives matched across the ranks,
checked against torch's own ``key_averages`` and the trace itself, and its straggler found."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from kinetoscope.analysis import ANALYSES_BY_NAME, TopOptions, needed_columns, prepared
from kinetoscope.findings import NEEDED_COLUMNS, RULES, run_rules
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from ..capture.helpers import load_trace
from ..torchrun import job_failed, run_torchrun, sessions_by_rank

pytestmark = pytest.mark.slow

EVERY = TopOptions(top=1_000_000)  # every instance
STEPS = 3
LATE_MS = 30  # rank 1 sleeps this long before every step's collectives

JOB = textwrap.dedent(
    f"""
    import json, os, sys, time, torch
    import torch.distributed as dist
    from torch.profiler import profile, schedule
    import kinetoscope
    from kinetoscope import ProfileConfig, ProfileMode, Profiler

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    out = sys.argv[1]
    config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=out)
    exporter = Profiler(config)
    t, parts = torch.randn(64 * 1024), [torch.empty(1024) for _ in range(2)]
    dist.barrier()
    with profile(activities=kinetoscope.activities(), experimental_config=config,
                 schedule=schedule(wait=0, warmup=1, active={STEPS}, repeat=1),
                 on_trace_ready=exporter.export_trace) as prof:
        for step in range({STEPS} + 1):  # a warm-up step, then the recorded ones
            if rank == 1:
                time.sleep({LATE_MS} / 1000)
            dist.all_reduce(t)
            dist.all_gather(parts, torch.randn(1024))
            dist.broadcast(t, 0)
            prof.step()
    torch_counts = {{e.key: [e.count, e.cpu_time_total] for e in prof.key_averages() if e.key.startswith("gloo:")}}
    with open(os.path.join(out, f"key_averages_rank{{rank}}.json"), "w") as f:
        json.dump(torch_counts, f)
    dist.barrier()
    dist.destroy_process_group()
    """
)


@pytest.fixture(scope="module")
def job(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gloo")
    script = root / "job.py"
    script.write_text(JOB)
    done = run_torchrun(script, 2, str(root / "prof"))
    assert done.returncode == 0, job_failed(done)
    report = ingest(IngestOptions(profile_dir=root / "prof", out=root / "ds"))
    assert report.status == "ok", [o.message for o in report.outcomes]
    return root


def _tables(dataset: Path) -> dict:
    chosen = tuple(ANALYSES_BY_NAME[n] for n in ("matched_collectives", "collective_waits", "clock_offsets"))
    with open_dataset(dataset) as ds:
        return prepared(ds.load(needed_columns(chosen)))


def test_gloo_collectives_are_matched_and_agree_with_torch(job: Path) -> None:
    tables = _tables(job / "ds")
    found = ANALYSES_BY_NAME["matched_collectives"](tables, EVERY).to_pylist()
    # every step's three collectives, on both ranks, numbered within their step (gloo traces carry no Seq)
    steps = sorted({r["step"] for r in found})
    assert len(steps) == STEPS and sorted((r["collective"], r["step"]) for r in found) == sorted(
        (name, step) for name in ("allreduce", "allgather", "broadcast") for step in steps
    )
    assert {(r["ranks"], r["matched_by"], r["number"]) for r in found} == {(2, "step order", 0)}
    # rank 1 comes to each all-reduce after its sleep: rank 0 waits there for it
    reduces = [r for r in found if r["collective"] == "allreduce"]
    assert {r["last_rank"] for r in reduces} == {1}
    assert max(r["max_skew_ns"] for r in reduces) >= (LATE_MS - 5) * 1_000_000  # the sleep, less any delay of rank 0
    waits = {r["rank"]: r for r in ANALYSES_BY_NAME["collective_waits"](tables).to_pylist()}
    assert waits[0]["wait_ns"] > waits[1]["wait_ns"]
    assert waits[1]["arrived_last"] >= STEPS and waits[0]["longest_wait_in"].startswith("allreduce #")
    # the time in collectives is that of the trace's gloo annotations, and torch's key_averages
    for rank, (session, _) in sessions_by_rank(job / "prof").items():
        spans = [e for e in load_trace(session)["traceEvents"] if e.get("name", "").startswith("gloo:")]
        assert waits[rank]["instances"] == len(spans) == 3 * STEPS
        assert waits[rank]["collective_ns"] == pytest.approx(1000 * sum(e["dur"] for e in spans), abs=len(spans))
        torch_counts = json.loads((job / "prof" / f"key_averages_rank{rank}.json").read_text())
        assert sum(count for count, _ in torch_counts.values()) == len(spans)
        torch_us = sum(total for _, total in torch_counts.values())
        assert waits[rank]["collective_ns"] / 1000 == pytest.approx(torch_us, abs=len(spans))
    # both ranks on this host: one clock, nothing shifted
    offsets = ANALYSES_BY_NAME["clock_offsets"](tables).to_pylist()
    assert {(r["clock"], r["offset_ns"], r["applied"]) for r in offsets} == {("reference", 0, False)}


def test_gloo_straggler_is_the_late_rank(job: Path) -> None:
    with open_dataset(job / "ds") as ds:
        tables = ds.load(NEEDED_COLUMNS)
    found = [f for f in run_rules(tables, rules=[RULES["straggler"]]) if f.rule == "straggler"]
    (straggler,) = found
    assert (straggler.rank, straggler.seen["by"]) == (1, "arrival")
    assert straggler.seen["arrived_last"] >= STEPS
    assert straggler.seen["held_up"][0]["collective"].startswith("allreduce")
    assert all(e.name.startswith("gloo:") for e in straggler.evidence)

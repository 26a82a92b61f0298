"""intra_op_parallelism_unused: on tables built by hand (the figures it computes), and on real CPU
captures with CPU utilisation samples (what the samples say of the process and the host)."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest
import torch
from torch.profiler import profile, schedule

import kinetoscope
from kinetoscope import ProfileConfig, ProfileMode, Profiler
from kinetoscope.findings import NEEDED_COLUMNS, RULES, run_rules
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from .built import Trace
from .test_built_rules import findings_of

pytestmark = pytest.mark.filterwarnings("ignore:Profiler won.t be using warmup")
MS = 1_000_000
STEPS = 4


def one_core_of_eight(process_pct: float, steps: int = STEPS) -> Trace:
    """``steps`` 100 ms steps of one 90 ms aten::mm on an 8-CPU host sampled every 50 ms: the process
    at ``process_pct`` of one core, the busiest CPU at it too, the other seven 10% busy."""
    trace = Trace()
    for step in range(steps):
        trace.add("user_annotation", f"ProfilerStep#{step}", step * 100 * MS, 100 * MS, step=step)
        trace.add("op", "aten::mm", step * 100 * MS, 90 * MS, step=step, depth=1)
    for i in range(1, 2 * steps):
        ts_ns = i * 50 * MS
        trace.counters.append({"name": "process CPU (% of one core)", "ts_ns": ts_ns, "value": process_pct})
        for cpu in range(8):
            busy = process_pct if cpu == 0 else 10.0
            trace.counters.append({"name": f"CPU {cpu} utilisation (%)", "ts_ns": ts_ns, "value": busy})
    for counter in trace.counters:
        counter.update(unit="%", device=-1)
    return trace


def test_one_busy_core_of_eight_is_found_with_the_idle_cores() -> None:
    (found,) = findings_of(one_core_of_eight(100.0), "intra_op_parallelism_unused")
    # 7 CPUs 90% idle: 6.3 idle cores, 7.3 cores usable; the mm's 360 ms spread over them
    assert found.seen == {**found.seen, "logical_cpus": 8, "process_cores_used": 1.0, "idle_cores": 6.3}
    assert found.seen["heavy_op_self_ns"] == 360 * MS and found.seen["heavy_op_pct_of_steps"] == 90.0
    assert found.gain_ns == int(360 * MS * (1 - 1 / 7.3))
    assert found.seen["top_ops"][0] == {"name": "aten::mm", "ns": 360 * MS, "count": STEPS}


def test_one_step_in_the_first_row_is_a_span_too() -> None:
    # GIVEN one profiled step (schedule(active=1)), its ProfilerStep the rank's first row
    (found,) = findings_of(one_core_of_eight(100.0, steps=1), "intra_op_parallelism_unused")
    # THEN the rule reads that step, as it reads several
    assert found.seen["heavy_op_self_ns"] == 90 * MS and found.seen["logical_cpus"] == 8


def test_a_process_using_its_cores_is_silent() -> None:
    assert findings_of(one_core_of_eight(400.0), "intra_op_parallelism_unused") == []  # 4 threads at work
    busy_host = one_core_of_eight(100.0)
    for counter in busy_host.counters:
        counter["value"] = 100.0  # every core busy: more threads would only share them
    assert findings_of(busy_host, "intra_op_parallelism_unused") == []


def capture_matmuls(tmp_path: Path, threads: int) -> dict:
    """STEPS steps of ten 512x512 matmuls with ``threads`` intra-op threads, CPU use sampled every 20 ms."""
    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        config = ProfileConfig(modes=[ProfileMode.RUNTIME, ProfileMode.CPU_UTIL],
                               profile_output_dir=tmp_path / "prof", sample_interval_ms=20)  # fmt: skip
        exporter = Profiler(config)
        a = torch.randn(512, 512)
        with profile(activities=kinetoscope.activities(), experimental_config=config,
                     schedule=schedule(wait=0, warmup=0, active=STEPS, repeat=1),
                     on_trace_ready=exporter.export_trace) as prof:  # fmt: skip
            for _ in range(STEPS):
                for _ in range(10):
                    a @ a
                prof.step()
    finally:
        torch.set_num_threads(before)
    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")).status == "ok"
    with open_dataset(tmp_path / "ds") as ds:
        return ds.load(NEEDED_COLUMNS)


def test_matmuls_on_one_thread_show_one_core_at_most(tmp_path: Path) -> None:
    # GIVEN matmuls on one intra-op thread; the idle-core bound lifted (this host's cores may be shared)
    tables = capture_matmuls(tmp_path, threads=1)
    (found,) = run_rules(tables, {"intra_op_parallelism_unused": {"min_idle_cores": 0}},
                         [RULES["intra_op_parallelism_unused"]])  # fmt: skip
    # THEN the host's CPUs are counted, the process used at most about one core, and the matmuls are named
    assert found.seen["logical_cpus"] == psutil.cpu_count(logical=True) and found.seen["samples"] > 0
    assert found.seen["process_cores_used"] <= 1.25
    assert found.seen["top_ops"][0]["name"] == "aten::mm" and found.seen["top_ops"][0]["count"] == STEPS * 10
    assert 0 <= found.gain_ns < found.seen["heavy_op_self_ns"]


def test_matmuls_on_every_core_are_silent(tmp_path: Path) -> None:
    tables = capture_matmuls(tmp_path, threads=psutil.cpu_count(logical=True) or 1)
    assert run_rules(tables, rules=[RULES["intra_op_parallelism_unused"]]) == []

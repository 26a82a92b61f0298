"""Rules on runs profiled in the test itself (CPU): each situation is built for real with
torch.profiler and kinetoscope's exporter, ingested, and diagnosed. No assertion depends on timing."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch.profiler import profile, schedule

import kinetoscope
from kinetoscope import ProfileConfig, ProfileMode, Profiler
from kinetoscope.findings import NEEDED_COLUMNS, RULES, Finding, run_rules
from kinetoscope.findings.host_rules import COMPILE_PATTERN
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from ..conftest import requires_cxx

STEPS = 4
pytestmark = pytest.mark.filterwarnings("ignore:Profiler won.t be using warmup")
# The mean-op-time bound is a timing: lifted, so the test depends only on counts.
NO_TIMING = {"tiny_ops": {"max_mean_op_us": 1e12}}


def capture(tmp_path: Path, step: Callable[[], object], *, with_stack: bool = False) -> dict:
    """Profile STEPS steps of ``step`` (each a ``ProfilerStep#N``), ingest, and load what the rules read."""
    config = ProfileConfig(modes=[ProfileMode.RUNTIME], profile_output_dir=tmp_path / "prof")
    exporter = Profiler(config)
    with profile(
        activities=kinetoscope.activities(),
        schedule=schedule(wait=0, warmup=0, active=STEPS, repeat=1),
        experimental_config=config,
        on_trace_ready=exporter.export_trace,
        with_stack=with_stack,
    ) as prof:
        for _ in range(STEPS):
            step()
            prof.step()
    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")).status == "ok"
    with open_dataset(tmp_path / "ds") as ds:
        return ds.load(NEEDED_COLUMNS)


def by_rule(findings: list[Finding]) -> dict[str, Finding]:
    return {f.rule: f for f in findings}


def test_item_in_a_loop_is_a_synchronisation_named_by_its_op(tmp_path: Path) -> None:
    # GIVEN steps that each read 20 scalars with .item()
    x = torch.randn(256)

    def step() -> None:
        for _ in range(20):
            x.sum().item()

    found = by_rule(run_rules(capture(tmp_path, step), NO_TIMING))
    # THEN one sync finding: 80 calls, 20 per step, caused by aten::item, with linked evidence
    sync = found["sync_in_step"]
    assert sync.seen["calls"] == STEPS * 20 and sync.seen["calls_per_step"] == 20.0
    assert sync.seen["caused_by_op"][0] == {**sync.seen["caused_by_op"][0], "name": "aten::item", "count": 80}
    assert len(sync.evidence) == 5 and all(e.name == "aten::_local_scalar_dense" for e in sync.evidence)
    assert set(found) == {"sync_in_step"}


def test_thousands_of_tiny_eager_ops_suggest_torch_compile(tmp_path: Path) -> None:
    # GIVEN an uncompiled loop of 600 multiply-adds per step (1,200 top-level ops)
    x = torch.randn(64)

    def step() -> None:
        y = x
        for _ in range(600):
            y = y * 1.0001 + 0.5

    found = by_rule(run_rules(capture(tmp_path, step), NO_TIMING))
    tiny = found["tiny_ops"]
    assert tiny.seen["ops_per_step"] == 1200.0 and tiny.seen["ops"] == STEPS * 1200
    assert {t["name"] for t in tiny.seen["top_ops"]} == {"aten::mul", "aten::add"}
    assert "torch.compile" in tiny.remedy and tiny.gain_ns == tiny.seen["op_time_ns"] // 2


@requires_cxx
def test_torch_compile_inside_the_window_is_found_with_its_time(tmp_path: Path) -> None:
    # GIVEN a function compiled on its first call, which falls inside the profiled window
    torch._dynamo.reset()
    fn = torch.compile(lambda t: (t * 2 + 1).sin())
    x = torch.randn(32)
    found = by_rule(run_rules(capture(tmp_path, lambda: fn(x)), NO_TIMING))
    compiled = found["compile_in_window"]
    assert compiled.seen["frame_compiles"] == 1
    assert 0 < compiled.seen["compile_ns"] == compiled.gain_ns
    assert compiled.evidence and all(re.search(COMPILE_PATTERN, e.name) for e in compiled.evidence)
    assert compiled.severity == "high"  # compilation is most of a window this short


def python_bookkeeping(n: int) -> int:
    total = 0
    for i in range(n):
        total += (i * 7) % 13
    return total


def test_python_in_the_step_is_named_by_its_frame(tmp_path: Path) -> None:
    # GIVEN steps that run a pure-Python loop beside one tensor op, recorded with Python stacks
    x = torch.randn(64)

    def step() -> None:
        python_bookkeeping(20_000)
        x.sum()

    tables = capture(tmp_path, step, with_stack=True)
    # WHEN the share threshold is lifted (the share itself is a timing), the frame doing it is named
    (found,) = run_rules(tables, {"python_bound": {"min_python_pct": 0}}, [RULES["python_bound"]])
    assert found.seen["top_frames"][0]["name"].endswith("python_bookkeeping")
    assert found.seen["top_frames"][0]["count"] == STEPS and found.gain_ns == found.seen["python_ns"] > 0


def test_a_clean_run_stays_silent(tmp_path: Path) -> None:
    # GIVEN a small model's forward and backward pass per step: no scalar reads, a few dozen ops, no compile
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    x = torch.randn(16, 64)
    tables = capture(tmp_path, lambda: model(x).sum().backward())
    # THEN no rule fires, at the default thresholds and with the timing bound lifted
    assert run_rules(tables) == [] and run_rules(tables, NO_TIMING) == []
    assert len(RULES) >= 8

"""A run we profile ourselves: op and annotation totals in the dataset equal torch's key_averages()."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed as dist
from torch.profiler import record_function

from kinetoscope.analysis import ANALYSES_BY_NAME, TopOptions, needed_columns
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

from .helpers import runtime_profile, tiny_model


@pytest.fixture
def gloo_group() -> Iterator[None]:
    """A one-rank gloo process group: its collectives record ``gloo:*`` scopes on gloo's worker threads."""
    if dist.is_initialized():
        pytest.skip("a process group is already initialised in this process")
    dist.init_process_group("gloo", rank=0, world_size=1, store=dist.HashStore())
    yield
    dist.destroy_process_group()


def _top_ops(tmp_path: Path) -> dict[tuple[str, bool], dict[str, Any]]:
    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")).status == "ok"
    with open_dataset(tmp_path / "ds") as ds:
        tables = ds.load(needed_columns((ANALYSES_BY_NAME["top_ops"],)))
    rows = ANALYSES_BY_NAME["top_ops"](tables, TopOptions(top=100_000)).to_pylist()
    return {(r["name"], r["annotation"]): r for r in rows}


def _agrees(got: dict[str, Any], calls: int, total_us: float, self_us: float | None) -> None:
    assert got["calls"] == calls, got
    # trace.json keeps µs with 3 decimals: totals agree to a nanosecond per call
    assert abs(got["total_ns"] / 1000 - total_us) <= 0.002 * calls + 1e-6, (got, total_us)
    if self_us is not None:
        assert abs(got["self_ns"] / 1000 - self_us) <= 0.002 * calls + 1e-6, (got, self_us)


@pytest.mark.parametrize(
    ("with_stack", "compiled"),
    [(False, False), (True, False), (True, True)],
    ids=["plain", "with_stack", "with_stack+compile"],
)
def test_cpu_op_totals_agree_with_key_averages(tmp_path: Path, with_stack: bool, compiled: bool) -> None:
    # GIVEN a real run, with Python frames between the ops (with_stack) and a torch.compile region
    model, x = tiny_model()
    step = torch.compile(model) if compiled else model
    for _ in range(2):
        step(x).sum().backward()  # warm-up (and compilation)
    with runtime_profile(tmp_path / "prof", record_shapes=True, with_stack=with_stack) as prof:
        for _ in range(3):
            with record_function("train_step"):
                step(x).sum().backward()
    expected = {e.key: (e.count, e.cpu_time_total, e.self_cpu_time_total) for e in prof.key_averages()}
    expected = {k: v for k, v in expected.items() if k.startswith("aten::")}

    got = {name: row for (name, annotation), row in _top_ops(tmp_path).items() if not annotation}
    assert {n for n in got if n.startswith("aten::")} == set(expected)
    for name, (calls, total_us, self_us) in expected.items():
        _agrees(got[name], calls, total_us, self_us)


@pytest.mark.slow
@pytest.mark.parametrize("with_stack", [False, True], ids=["plain", "with_stack"])
def test_record_function_scopes_and_gloo_collectives_agree_with_key_averages(
    tmp_path: Path, gloo_group: None, with_stack: bool
) -> None:
    # GIVEN a real run with nested record_function scopes and gloo all-reduces inside one of them
    model, x = tiny_model()
    with runtime_profile(tmp_path / "prof", record_shapes=True, with_stack=with_stack) as prof:
        for _ in range(3):
            with record_function("train_step"):
                model(x).sum().backward()
                with record_function("sync_grads"):
                    for p in model.parameters():
                        assert p.grad is not None
                        dist.all_reduce(p.grad)
    averages = {(e.key, bool(e.is_user_annotation)): e for e in prof.key_averages()}
    # WHEN kinetoscope ranks the ops and annotations
    got = _top_ops(tmp_path)
    # THEN every op and annotation torch lists is ranked, marked alike, with torch's calls and times
    for (name, annotation), e in averages.items():
        if e.is_legacy or not (name.startswith(("aten::", "c10d::")) or annotation):
            continue  # Python frames (with_stack) and autograd nodes are outside this test
        assert (name, annotation) in got, name
        self_us: float | None = e.self_cpu_time_total
        if name.startswith("gloo:"):
            self_us = None  # torch counts gloo's scopes as async (they end on another thread): self 0
        elif annotation and with_stack:
            self_us = None  # torch subtracts the Python frames inside a scope; kinetoscope never does
        _agrees(got[(name, annotation)], e.count, e.cpu_time_total, self_us)
    assert got[("sync_grads", True)]["calls"] == 3 and got[("gloo:all_reduce", True)]["calls"] == 12
    # the scope around the all-reduces loses their c10d ops' time, whatever the Python frames between them
    c10d = averages[("c10d::allreduce_", False)].cpu_time_total
    scope = averages[("sync_grads", True)].cpu_time_total
    assert abs(got[("sync_grads", True)]["self_ns"] / 1000 - (scope - c10d)) <= 0.002 * 15 + 1e-6

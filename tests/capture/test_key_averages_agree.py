"""A run we profile ourselves: CPU op totals in the dataset equal torch's key_averages()."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.profiler import record_function

from kinetoscope.analysis import ANALYSES_BY_NAME, TopOptions, needed_columns
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.query import open_dataset

from .helpers import runtime_profile, tiny_model


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
    expected = {e.key: (e.count, e.cpu_time_total) for e in prof.key_averages() if e.key.startswith("aten::")}

    self_us = {e.key: e.self_cpu_time_total for e in prof.key_averages() if e.key.startswith("aten::")}

    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")).status == "ok"
    with open_dataset(tmp_path / "ds") as ds:
        tables = ds.load(needed_columns((ANALYSES_BY_NAME["top_ops"],)))
    rows = ANALYSES_BY_NAME["top_ops"](tables, TopOptions(top=1000)).to_pylist()
    got = {r["name"]: r for r in rows if r["name"].startswith("aten::")}
    assert set(got) == set(expected)
    for name, (calls, total_us) in expected.items():
        assert got[name]["calls"] == calls, name
        # trace.json keeps µs with 3 decimals: totals agree to a nanosecond per call
        assert abs(got[name]["total_ns"] / 1000 - total_us) <= 0.002 * calls + 1e-6, (name, got[name], total_us)
        assert abs(got[name]["self_ns"] / 1000 - self_us[name]) <= 0.002 * calls + 1e-6, (name, got[name])

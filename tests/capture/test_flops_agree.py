"""CPU runs we profile ourselves: the roofline's FLOPs for the matrix products equal torch's
``key_averages()`` flops, op by op, and ops find their ``nn.Module`` frames."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from kinetoscope.analysis import ANALYSES_BY_NAME, TopOptions, attribution, needed_columns
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.query import open_dataset

from .helpers import runtime_profile, tiny_model


def _step(model: torch.nn.Module, x: torch.Tensor, w: torch.Tensor, batch: torch.Tensor) -> None:
    model(x).sum().backward()  # Linear: aten::addmm forward, aten::mm in backward
    torch.mm(x, w)
    torch.bmm(batch, batch.transpose(1, 2))


def test_matmul_flops_agree_with_torch(tmp_path: Path) -> None:
    model, x = tiny_model()
    w, batch = torch.randn(64, 32), torch.randn(4, 16, 8)
    with runtime_profile(tmp_path / "prof", record_shapes=True, with_flops=True) as prof:
        for _ in range(2):
            _step(model, x, w, batch)
    expected = {e.key: e.flops for e in prof.key_averages() if e.key in ("aten::mm", "aten::addmm", "aten::bmm")}
    assert expected.get("aten::mm") and expected.get("aten::addmm")

    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")).status == "ok"
    analysis = ANALYSES_BY_NAME["op_roofline"]
    with open_dataset(tmp_path / "ds") as ds:
        rows = analysis(ds.load(needed_columns((analysis,))), TopOptions(top=1000)).to_pylist()
    got: dict[str, int] = {}
    for row in rows:
        if row["op"] in expected:
            assert row["time_source"] == "cpu" and row["flops"] is not None, row
            got[row["op"]] = got.get(row["op"], 0) + row["flops"] * row["calls"]
    assert got == expected


def test_forward_ops_find_their_module_frame(tmp_path: Path) -> None:
    # GIVEN a CPU run with module frames (with_stack and with_modules)
    model, x = tiny_model()
    with runtime_profile(tmp_path / "prof", with_stack=True, with_modules=True):
        model(x).sum().backward()
    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")).status == "ok"
    with open_dataset(tmp_path / "ds") as ds:
        events = ds.load({"events": ("run", "rank", "id", "name", "kind", "parent_id")})["events"]
    # THEN every forward aten::addmm sits in a Linear module frame, found through the Python rows
    names = events.column("name").to_pylist()
    addmm = [i for i, name in enumerate(names) if name == "aten::addmm"]
    found = attribution.nearest_module(events, np.asarray(addmm, dtype=np.int64))
    assert len(addmm) == 2
    assert [names[i] for i in found] == ["nn.Module: Linear_0", "nn.Module: Linear_1"]

"""CPU runs we profile ourselves: the roofline's FLOPs equal torch's ``key_averages()`` flops, op
by op, wherever torch has a number (matrix products, conv2d, add, mul), differ where documented
(a broadcast whose first input is the smaller), and ops find their ``nn.Module`` frames."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch.utils.flop_counter import FlopCounterMode

from kinetoscope.analysis import ANALYSES_BY_NAME, TopOptions, needed_columns
from kinetoscope.analysis.ops import attribution
from kinetoscope.ingest import IngestOptions, ingest
from kinetoscope.report.opening import open_dataset

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


TORCH_COUNTED = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::conv2d", "aten::add", "aten::mul"}


def _roofline_flops(tmp_path: Path) -> dict[str, int]:
    """FLOPs in all per op name, from ``op_roofline`` over the capture in ``tmp_path / "prof"``."""
    assert ingest(IngestOptions(profile_dir=tmp_path / "prof", out=tmp_path / "ds")).status == "ok"
    analysis = ANALYSES_BY_NAME["op_roofline"]
    with open_dataset(tmp_path / "ds") as ds:
        rows = analysis(ds.load(needed_columns((analysis,))), TopOptions(top=1000)).to_pylist()
    got: dict[str, int] = {}
    for row in rows:
        if row["flops"] is not None:
            got[row["op"]] = got.get(row["op"], 0) + row["flops"] * row["calls"]
    return got


def _conv_net_step() -> None:
    """A small conv net trained one step: conv2d, batch norm, a Linear, attention, a scaled residual."""
    torch.manual_seed(0)
    conv, norm, linear = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1), torch.nn.BatchNorm2d(8), torch.nn.Linear(32, 16)
    image, q = torch.randn(2, 3, 8, 8), torch.randn(2, 2, 8, 4, requires_grad=True)
    features = norm(conv(image)).relu().flatten(1).view(2, 4, 32)
    hidden = linear(features)
    mixed = torch.baddbmm(hidden, hidden, torch.randn(2, 16, 16))
    attended = torch.nn.functional.scaled_dot_product_attention(q, q, q).sum()
    loss = (mixed * mixed + 2.0 * mixed).softmax(-1).sum() + attended
    loss.backward()


def test_every_count_torch_makes_agrees(tmp_path: Path) -> None:
    with runtime_profile(tmp_path / "prof", record_shapes=True, with_flops=True) as prof:
        _conv_net_step()
    expected = {e.key: e.flops for e in prof.key_averages() if e.flops}
    # torch counts these ops and no other: attention, norms, softmax, reductions and the convolution's
    # backward have no count in torch's profiler (docs/analyses.md lists them)
    assert set(expected) <= TORCH_COUNTED
    assert {"aten::conv2d", "aten::addmm", "aten::baddbmm", "aten::mm", "aten::mul", "aten::add"} <= set(expected)
    got = _roofline_flops(tmp_path)
    assert {op: got.get(op) for op in expected} == expected
    # the convolution's backward as torch.utils.flop_counter counts it (the weight gradient only:
    # the image needs none), and the attention by hand (flop_counter has no CPU-flash formula)
    with FlopCounterMode(display=False) as counter:
        _conv_net_step()
    counted = {str(op): n for op, n in counter.get_flop_counts()["Global"].items()}
    assert got["aten::convolution_backward"] == counted["aten.convolution_backward"] == expected["aten::conv2d"]
    assert got["aten::_scaled_dot_product_flash_attention_for_cpu"] == 2 * 4 * 8 * 8 * (4 + 4)
    assert got["aten::_scaled_dot_product_flash_attention_for_cpu_backward"] == 2 * 4 * 8 * 8 * (3 * 4 + 2 * 4)


def test_a_broadcast_with_the_smaller_input_first_is_where_torch_counts_less(tmp_path: Path) -> None:
    # GIVEN [8,1] * [8,16]: torch counts the first input's 8 elements, the product has 128
    column, block = torch.randn(8, 1), torch.randn(8, 16)
    with runtime_profile(tmp_path / "prof", record_shapes=True, with_flops=True) as prof:
        torch.mul(column, block)
    assert {e.key: e.flops for e in prof.key_averages() if e.flops} == {"aten::mul": 8}
    assert _roofline_flops(tmp_path)["aten::mul"] == 128  # one FLOP per output element (docs/analyses.md)


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
